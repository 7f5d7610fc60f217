package op

import (
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Resendable reports whether an UNKNOWN record may be reconciled by
// sending its call again, with arguments of fingerprint fp: only the same
// arguments, and only to a server that advertises the idempotency
// capability (advertised; capability is its value) and still remembers
// the key, which then either replays its first execution or runs the call
// for the first time, never twice.
func Resendable(rec *ledger.Record, fp string, advertised bool, capability any, now time.Time) bool {
	if !advertised || rec.Tombstone || rec.Fingerprint != fp {
		return false
	}
	if r, ok := Retention(capability); ok && !now.Before(rec.CreatedAt.Add(r)) {
		return false // the server may have forgotten the key
	}
	return true
}

// Retention is how long a server keeps keys, from the value of its
// idempotency capability ({"retentionSeconds": N}, decoded from JSON).
func Retention(capability any) (time.Duration, bool) {
	m, ok := capability.(map[string]any)
	if !ok {
		return 0, false
	}
	secs, ok := m["retentionSeconds"].(float64)
	if !ok || secs <= 0 {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

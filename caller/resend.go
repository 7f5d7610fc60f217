package caller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// canResend reports whether an UNKNOWN operation may be reconciled by
// sending it again: only to a server that advertises the idempotency
// capability and still remembers the key, which then either replays its
// first execution or runs the call for the first time, never twice.
func (c *Caller[P, R]) canResend(op *operation[P], rec *ledger.Record) bool {
	if op.args == nil {
		return false
	}
	s := c.conn.Server()
	return Resendable(rec, op.fp, s.KeyAware, s.Capability, c.opts.Now())
}

// resend takes an UNKNOWN record back to PROCESSING under a fresh lease and
// sends the call again with the same key.
func (c *Caller[P, R]) resend(ctx context.Context, op *operation[P], rec *ledger.Record) (*Outcome[R], error) {
	op.id = rec.ID
	// A take-over: the store gives the record this owner and the next fence,
	// so the earlier owner, should it wake up, can record nothing.
	again, err := c.lc.Resend(ctx, rec)
	if errors.Is(err, ledger.ErrStateChanged) {
		return c.settleID(ctx, op) // another caller reconciled it first
	}
	if err != nil {
		return nil, fmt.Errorf("client: reconcile %s: %w", rec.Tool, err)
	}
	c.log.Info("re-sending an UNKNOWN call to a key-aware server", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key))
	o, err := c.run(ctx, op, again)
	c.resentResolved(ctx, rec, o, err)
	return o, err
}

// resentResolved reports to telemetry that the re-send of rec, an UNKNOWN
// record, resolved it, when it did: the server answered (o), or the call
// ended in a state other than UNKNOWN and PROCESSING, as the record now
// says.
func (c *Caller[P, R]) resentResolved(ctx context.Context, rec *ledger.Record, o *Outcome[R], err error) {
	if o != nil {
		c.tel.Resolved(ctx, rec, o.Record, ledger.MethodResend)
		return
	}
	st, ok := StateOf(err)
	if !ok || st == ledger.StateUnknown || st == ledger.StateProcessing {
		return
	}
	after, gerr := c.store.Get(ctx, rec.ID)
	if gerr != nil {
		c.log.Debug("reading the re-sent record for telemetry", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "err", gerr)
		return
	}
	c.tel.Resolved(ctx, rec, after, ledger.MethodResend)
}

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

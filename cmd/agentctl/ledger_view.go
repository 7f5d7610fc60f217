package main

import (
	"context"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
)

// inspected is the ledger as the commands that show records to a person
// read it (ledger list, show, stats, purge, reconcile). A stored result is
// the tool's answer, kept whole because a replay must return it byte for
// byte, so it may hold what the tool echoed: an API key, a password. Those
// commands see it redacted the way arguments are, and arguments stored by
// older builds, which looked at field names only, are redacted again.
type inspected struct {
	ledger.Store
}

type inspectedEvents struct {
	inspected
	ledger.EventLog
}

// inspect wraps st for the commands that only show records: redacted, and
// as they read now (an approval whose expiry passed is REJECTED, not a
// call that still waits; see ledger.AsRead).
func inspect(st ledger.Store) ledger.Store {
	st = ledger.AsReadStore(st, nil)
	if el, ok := st.(ledger.EventLog); ok {
		return inspectedEvents{inspected{st}, el}
	}
	return inspected{st}
}

func (s inspected) Unwrap() ledger.Store { return s.Store }

func (s inspected) Get(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	r, err := s.Store.Get(ctx, id)
	if r != nil {
		ledger.RedactRecord(r)
	}
	return r, err
}

func (s inspected) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	p, err := s.Store.List(ctx, f)
	for _, r := range p.Records {
		ledger.RedactRecord(r)
	}
	return p, err
}

func (s inspected) FindRecent(ctx context.Context, q ledger.RecentQuery) ([]*ledger.Record, error) {
	recs, err := s.Store.FindRecent(ctx, q)
	for _, r := range recs {
		ledger.RedactRecord(r)
	}
	return recs, err
}

// encryptedCount is how many of recs this run could not decrypt.
func encryptedCount(recs []*ledger.Record) int {
	n := 0
	for _, r := range recs {
		if string(r.Arguments) == encryptedJSON || string(r.Result) == encryptedJSON {
			n++
		}
	}
	return n
}

// whyEncrypted says why records listed [encrypted] could not be read, and
// what to do: the reading of the first of them names its key id, and
// whether the key file given does not hold it or none was given.
func (a *app) whyEncrypted(ctx context.Context, st ledger.Store, recs []*ledger.Record) string {
	for _, r := range recs {
		if string(r.Arguments) != encryptedJSON && string(r.Result) != encryptedJSON {
			continue
		}
		if _, err := st.Get(ctx, r.ID); err != nil {
			return ledger.OneLine(strings.TrimPrefix(err.Error(), "ledger: "), 400)
		}
	}
	if a.ledgerKeyFile != "" {
		return "the key file " + a.ledgerKeyFile + " does not match them; pass the key file that holds their key"
	}
	return "pass --ledger-key-file FILE with their key to read them"
}

// unreadable is the error of a command that shows records whose payloads
// this run cannot decrypt (no key, or a key that does not match): the
// reading of the first such record, which names the key id it needs.
func unreadable(ctx context.Context, st ledger.Store, recs []*ledger.Record) error {
	for _, r := range recs {
		if string(r.Arguments) != encryptedJSON && string(r.Result) != encryptedJSON {
			continue
		}
		if _, err := st.Get(ctx, r.ID); err != nil {
			return err
		}
	}
	return nil
}

// encryptedJSON is what codec.Wrap lists in place of a payload it
// cannot decrypt.
const encryptedJSON = `"` + codec.Encrypted + `"`

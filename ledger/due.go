package ledger

import (
	"context"
	"errors"
	"fmt"
)

// DueQuery selects the UNKNOWN records due for a reconciliation attempt:
// those whose ReconcileAt is at or before the store's now.
type DueQuery struct {
	// Tenant limits the list to one tenant's records. A sweep of the whole
	// ledger (a server guard's, which serves every tenant) leaves it empty
	// and sets AllTenants instead.
	Tenant     string
	AllTenants bool
	// Layers, when not empty, limits the list to records of these layers
	// (the layer "" included when listed); empty: every layer.
	Layers []string
	// Tools, when not empty, limits the list to records of these tools (at
	// most MaxDueTools): a sweep names the tools it can reconcile, so that
	// UNKNOWN records of tools it cannot never fill its list and starve
	// the others. The stores read one index range per tool, each bounded
	// by the list's size. Empty: every tool.
	Tools []string
	// Limit bounds the list (DefaultDueLimit when zero, at most
	// MaxDueLimit), so a sweep does bounded work.
	Limit int
}

// Bounds of DueQuery.Limit.
const (
	DefaultDueLimit = 100
	MaxDueLimit     = 1000
)

// MaxDueTools bounds DueQuery.Tools: each tool is one index range read.
const MaxDueTools = 64

// Check validates q: a tenant, or AllTenants and no tenant; valid layers.
func (q DueQuery) Check() error {
	switch {
	case q.AllTenants && q.Tenant != "":
		return errors.New("ledger: due query: a tenant and every tenant at once; set one of Tenant and AllTenants")
	case !q.AllTenants:
		if err := ValidateTenant(q.Tenant); err != nil {
			return err
		}
	}
	for _, l := range q.Layers {
		if err := ValidateLayer(l); err != nil {
			return err
		}
	}
	if len(q.Tools) > MaxDueTools {
		return fmt.Errorf("ledger: due query: %d tools; at most %d at once, list the rest in another query", len(q.Tools), MaxDueTools)
	}
	for _, t := range q.Tools {
		if t == "" {
			return errors.New("ledger: due query: an empty tool name; name each tool, or leave Tools empty for every tool")
		}
	}
	if q.Limit < 0 {
		return fmt.Errorf("ledger: due query: limit %d; want 0 (the default) to %d", q.Limit, MaxDueLimit)
	}
	return nil
}

// Size is the list's bound: Limit, or DefaultDueLimit, at most MaxDueLimit.
func (q DueQuery) Size() int {
	if q.Limit == 0 {
		return DefaultDueLimit
	}
	return min(q.Limit, MaxDueLimit)
}

// DueLister is the optional part of a Store that lists the UNKNOWN records
// due for a reconciliation attempt, for a background sweep (the proxy's,
// the server guard's, agentctl ledger reconcile --auto). Both stores of
// this module implement it, each with an index that keeps its cost bounded
// by the list's size. Callers find it with a type assertion on
// Unwrap(store); a wrapper that changes records (codec.Wrap) offers it
// through the wrapped store's records, which Get reads again.
type DueLister interface {
	// DueUnknown returns at most q.Size() UNKNOWN records whose
	// ReconcileAt is at or before now, the earliest due first, then those
	// UNKNOWN longest (UpdatedAt).
	DueUnknown(ctx context.Context, q DueQuery) ([]*Record, error)
}

// DueUnknown lists the UNKNOWN records of st due for a reconciliation
// attempt (see DueLister), read again through st so that a wrapper (an
// encrypting codec) returns them as its Get does. A Store without a
// DueLister fails with ErrNoDueList.
func DueUnknown(ctx context.Context, st Store, q DueQuery) ([]*Record, error) {
	dl, ok := Unwrap(st).(DueLister)
	if !ok {
		return nil, ErrNoDueList
	}
	recs, err := dl.DueUnknown(ctx, q)
	if err != nil || Unwrap(st) == st {
		return recs, err
	}
	out := recs[:0]
	for _, r := range recs {
		got, err := st.Get(ctx, r.ID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got)
	}
	return out, nil
}

// ErrNoDueList: the store cannot list the records due for reconciliation.
var ErrNoDueList = errors.New("ledger: this store cannot list the UNKNOWN records due for reconciliation")

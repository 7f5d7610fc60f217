package ledger

import (
	"errors"
	"fmt"
	"time"
)

// Validate checks a claim before any store touches storage: the identity
// rules, a fingerprint, an owner for the lease, a known reuse
// policy and no negative durations. Every Store calls it, so the rules are
// the same on every backend.
func (req ClaimRequest) Validate() error {
	if err := req.ID.Validate(); err != nil {
		return err
	}
	switch {
	case req.Fingerprint == "":
		return errors.New("ledger: claim: empty fingerprint")
	case req.Owner == "":
		return errors.New("ledger: claim: empty owner; a lease needs one (see process.NewOwner)")
	case req.ReusePolicy != "" && req.ReusePolicy != Reexecute && req.ReusePolicy != Verify:
		return fmt.Errorf("ledger: claim: unknown reuse policy %q", req.ReusePolicy)
	case req.Lease < 0 || req.Retention < 0:
		return errors.New("ledger: claim: negative lease or retention")
	}
	return nil
}

// Claimable reports whether a claim with fingerprint fp at now takes the
// existing record r over (or replaces it) instead of following it: a
// RETRYABLE record with the same fingerprint, a REJECTED record with any,
// and a settled record past its retention that is not a tombstone. Stores
// use it to settle a duplicate from a plain read; the conflicting write
// still decides every claim that wins.
func Claimable(r *Record, fp string, now time.Time) bool {
	switch {
	case r.Tombstone:
		return false
	case r.State.Settled() && !r.ExpiresAt.After(now):
		return true
	case r.State == StateRejected:
		return true
	}
	return r.State == StateRetryable && r.Fingerprint == fp
}

// Follow is the outcome of a claim that found r and did not win it: r, and
// ErrKeyReused when r was made with other arguments. store names the
// backend in the message.
func Follow(store string, r *Record, req ClaimRequest) (Claim, error) {
	c := Claim{Record: r}
	if r.Fingerprint != req.Fingerprint {
		return c, fmt.Errorf("%s: claim %s key %s: stored fingerprint %.12s, request %.12s: %w",
			store, req.Tool, ShortHash(req.Key), r.Fingerprint, req.Fingerprint, ErrKeyReused)
	}
	return c, nil
}

// Mismatch is the error of a Transition t that found cur instead of what it
// expected: ErrLeaseLost for an owner's write (from a leased state, or a
// fenced one from UNKNOWN), ErrStateChanged otherwise. store names the
// backend in the message.
func Mismatch(store string, t Transition, cur *Record) error {
	what := fmt.Sprintf("%s: transition %s -> %s of %s key %s", store, t.From, t.To, t.Tool, ShortHash(t.Key))
	owned := t.From.Waiting() || (t.From == StateUnknown && t.Fence != 0)
	switch {
	case cur.Tombstone:
		if owned {
			return fmt.Errorf("%s: the record is a tombstone: %w", what, ErrLeaseLost)
		}
		return fmt.Errorf("%s: the record is a tombstone: %w", what, ErrStateChanged)
	case t.Finding != nil && cur.State == t.From && cur.Fence == t.Fence && cur.FindingCount != t.Finding.Count:
		return fmt.Errorf("%s: another finding was recorded first (%d findings, not %d): %w", what, cur.FindingCount, t.Finding.Count, ErrStateChanged)
	case owned && cur.State == t.From && cur.Fence != t.Fence:
		return fmt.Errorf("%s: fence %d is stale; the key is at fence %d (owner %q): %w", what, t.Fence, cur.Fence, cur.Owner, ErrLeaseLost)
	case owned && cur.State == t.From:
		return fmt.Errorf("%s: the lease belongs to %q, not %q: %w", what, cur.Owner, t.Owner, ErrLeaseLost)
	case owned:
		return fmt.Errorf("%s: the record is now %s: %w", what, cur.State, ErrLeaseLost)
	}
	return fmt.Errorf("%s: the record is %s: %w", what, cur.State, ErrStateChanged)
}

package ledger

import (
	"errors"
	"fmt"
)

// Validate checks a claim before any store touches storage: the identity
// rules, a fingerprint, an owner for a PROCESSING lease, a known reuse
// policy and no negative durations. Every Store calls it, so the rules are
// the same on every backend.
func (req ClaimRequest) Validate() error {
	if err := req.ID.Validate(); err != nil {
		return err
	}
	switch {
	case req.Fingerprint == "":
		return errors.New("ledger: claim: empty fingerprint")
	case req.Owner == "" && !req.NeedsApproval:
		return errors.New("ledger: claim: empty owner; a PROCESSING lease needs one")
	case req.ReusePolicy != "" && req.ReusePolicy != Reexecute && req.ReusePolicy != Verify:
		return fmt.Errorf("ledger: claim: unknown reuse policy %q", req.ReusePolicy)
	case req.Lease < 0 || req.Retention < 0:
		return errors.New("ledger: claim: negative lease or retention")
	}
	return nil
}

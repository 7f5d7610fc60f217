package ledger

// The compare-and-set rule of every store, in one place: what a claim
// makes and what a transition checks and moves. A store applies it in its
// own statements; it never decides these on its own.

// State is the state a winning claim of req makes: PENDING_APPROVAL for a
// call a person must answer first, else PROCESSING (the table's edge for
// OnClaimForApproval or OnClaim from no record).
func (req ClaimRequest) State() State {
	on := OnClaim
	if req.NeedsApproval {
		on = OnClaimForApproval
	}
	to, err := Next(none, on)
	if err != nil {
		panic("ledger: the table has no claim edge: " + err.Error())
	}
	return to
}

// Rule is what a store checks and moves for one transition.
type Rule struct {
	// CheckOwner: the record must be held by the transition's Owner, and
	// CheckFence: under its Fence. Leaving a leased state checks both; a
	// late result from UNKNOWN (Fence set) checks the fence, so an owner
	// that was taken over can record nothing.
	CheckOwner, CheckFence bool
	// BumpFence: the record's fence goes up by one, a take-over: a re-send
	// from UNKNOWN, or a new owner taking the lease.
	BumpFence bool
	// Owner is the owner the record has after the transition when it
	// enters a leased state ("" otherwise: the owner is kept).
	Owner string
	// ClearError: a new execution starts without the last one's error
	// (entering PROCESSING), unless the transition writes one.
	ClearError bool
	// CheckFindings: the record must still have the FindingCount the
	// transition's Finding was read with, so that two findings recorded at
	// once never drop one from the history.
	CheckFindings bool
	// KeepUpdated: the transition leaves the state as it was (an
	// inconclusive finding on an UNKNOWN record) and UpdatedAt keeps saying
	// when the record entered it.
	KeepUpdated bool
}

// Rule is t's compare-and-set.
func (t Transition) Rule() Rule {
	r := Rule{}
	switch {
	case t.From.Waiting():
		r.CheckOwner, r.CheckFence = true, true
	case t.From == StateUnknown && t.Fence != 0:
		r.CheckFence = true
	}
	if (t.From == StateUnknown && t.To == StateProcessing) || (t.NewOwner != "" && t.To.Waiting()) {
		r.BumpFence = true
	}
	if t.To.Waiting() {
		r.Owner = t.Owner
		if t.NewOwner != "" {
			r.Owner = t.NewOwner
		}
	}
	r.ClearError = t.To == StateProcessing && t.ErrorKind == "" && t.ErrorMessage == ""
	r.CheckFindings = t.Finding != nil
	r.KeepUpdated = t.Finding != nil && t.From == t.To
	return r
}

// Holds reports whether cur still passes t's compare-and-set: the state,
// and the owner and fence that t's rule checks.
func (t Transition) Holds(cur *Record) bool {
	if cur.Tombstone || cur.State != t.From {
		return false
	}
	r := t.Rule()
	return (!r.CheckOwner || cur.Owner == t.Owner) && (!r.CheckFence || cur.Fence == t.Fence) &&
		(!r.CheckFindings || cur.FindingCount == t.Finding.Count)
}

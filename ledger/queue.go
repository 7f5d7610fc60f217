package ledger

import "strings"

// The approval queue's protocol, kept in a PENDING_APPROVAL record's
// owner: written and read here only.

const (
	queueWaiting  = "queue"
	queueApproved = "approved"
)

// Queued is what a queued record's owner says about the call.
type Queued struct {
	Requester     string
	PolicyVersion string
	// Approved: a person approved it and it waits for the call that runs it.
	Approved bool
	// Distinct: the policy the call was queued under requires an approver
	// other than the requester. DistinctKnown is false for a call queued
	// by an older build, whose owner does not say.
	Distinct, DistinctKnown bool
}

// Owner is the owner a queued call's record carries: a name that is no
// process (so no one's exit ends the lease, only the approval's expiry),
// "queue;VERSION!RULE;WHO" while it waits and "approved;VERSION!RULE;WHO"
// once a person approved it, where RULE says whether the policy requires
// another approver ("distinct" or "any"; without DistinctKnown, as older
// builds wrote it, "VERSION" alone). The caller and a person's decision
// both write it; QueuedCall reads it.
func (q Queued) Owner() string {
	state := queueWaiting
	if q.Approved {
		state = queueApproved
	}
	version := q.PolicyVersion
	if q.DistinctKnown {
		rule := ruleAny
		if q.Distinct {
			rule = ruleDistinct
		}
		version += "!" + rule
	}
	// No '#' or '@': the name must never parse as a process (process.Parse).
	requester := strings.NewReplacer("#", "_", "@", "_", ";", "_").Replace(q.Requester)
	return state + ";" + version + ";" + requester
}

// QueueOwner is Queued{…}.Owner() of a call whose owner does not say
// what its policy requires of the approver.
func QueueOwner(approved bool, version, requester string) string {
	return Queued{Requester: requester, PolicyVersion: version, Approved: approved}.Owner()
}

const (
	ruleAny      = "any"
	ruleDistinct = "distinct"
)

// QueuedCall reports whether r is a queued call (PENDING_APPROVAL under a
// queue's lease rather than a prompt's), and what its owner says.
func QueuedCall(r *Record) (Queued, bool) {
	if r == nil || r.State != StatePendingApproval || r.Tombstone {
		return Queued{}, false
	}
	state, rest, ok := strings.Cut(r.Owner, ";")
	if !ok || (state != queueWaiting && state != queueApproved) {
		return Queued{}, false
	}
	version, requester, ok := strings.Cut(rest, ";")
	if !ok {
		return Queued{}, false
	}
	q := Queued{Requester: requester, PolicyVersion: version, Approved: state == queueApproved}
	if v, rule, ok := strings.Cut(version, "!"); ok && (rule == ruleAny || rule == ruleDistinct) {
		q.PolicyVersion, q.Distinct, q.DistinctKnown = v, rule == ruleDistinct, true
	}
	return q, true
}

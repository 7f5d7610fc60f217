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
}

// QueueOwner is the owner a queued call's record carries: a name that is
// no process (so no one's exit ends the lease, only the approval's
// expiry), "queue;VERSION;WHO" while it waits and "approved;VERSION;WHO"
// once a person approved it. The caller and a person's decision both
// write it; QueuedCall reads it.
func QueueOwner(approved bool, version, requester string) string {
	state := queueWaiting
	if approved {
		state = queueApproved
	}
	// No '#' or '@': the name must never parse as a process (ParseOwner).
	requester = strings.NewReplacer("#", "_", "@", "_", ";", "_").Replace(requester)
	return state + ";" + version + ";" + requester
}

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
	return Queued{Requester: requester, PolicyVersion: version, Approved: state == queueApproved}, true
}

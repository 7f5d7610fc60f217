package ledger

// Meaning says in a few words what r's state means for whoever reads it,
// a model (ledger_status) or a person (agentctl ledger show, the console):
// whether the call ran, and what may be done with it now. It is the one
// text for that; no consumer words a state on its own.
func Meaning(r *Record) string {
	if r.Tombstone {
		return "its record has expired; whether it took effect can no longer be shown, and a person decides before it is sent again"
	}
	switch r.State {
	case StateSucceeded:
		return RowOf(StateSucceeded).Means
	case StateFailed:
		return RowOf(StateFailed).Means
	case StateProcessing:
		return RowOf(StateProcessing).Means
	case StatePendingApproval:
		if ap := r.Approval; ap != nil && ap.Decision != DecisionDenied {
			// A queued call a person approved: it runs when called again.
			return "it was approved by " + OneLine(ap.By, 100) + " on " + stamp(ap.At) +
				" and has not run yet: make the same call again (same tool and arguments) to run it once"
		}
		return RowOf(StatePendingApproval).Means
	case StateDenied:
		if r.Approval != nil && r.Approval.Reason != "" {
			return "it was refused (reason: " + OneLine(r.Approval.Reason, 200) + ")"
		}
		return RowOf(StateDenied).Means
	case StateRetryable:
		if r.Reconciled != nil {
			return "it was found not to have taken effect (" + string(r.Reconciled.Method) + ") and will be sent again under the same key"
		}
		return RowOf(StateRetryable).Means
	case StateRejected:
		if r.ErrorKind == KindApprovalExpired {
			return "it did not run: no one approved it before its approval expired; nothing took effect, and the call may be made again (it then waits for approval again)"
		}
		return "it did not run (" + OneLine(r.ErrorMessage, 200) + "); nothing took effect and the call may be made again"
	}
	// UNKNOWN, and a state with no wording of its own above: its row's
	// text (RowOf reads a state it does not know as UNKNOWN).
	return RowOf(r.State).Means
}

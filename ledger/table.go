package ledger

import (
	"fmt"
	"strings"
	"time"
)

// This file is the state machine of DESIGN.md, written once: which event
// moves a record from which state to which (next), and what a caller does
// with a record it found (Act) and what a model is told about it (Explain).
// Stores, the lifecycle, the client, the server and the planner all read
// it; none of them decides on its own what a state means.

// Trigger is something that happens to an operation: the events of the
// state diagram.
type Trigger string

// The triggers. Claims are decided by Store.Claim (an insert that conflicts
// on the unique key); every other event is a Store.Transition.
const (
	// OnClaim: a caller claims the key to execute it.
	OnClaim Trigger = "claim"
	// OnClaimForApproval: a caller claims the key to ask a person first.
	OnClaimForApproval Trigger = "claim_for_approval"
	// OnApprove: a person (or a standing approval) said yes.
	OnApprove Trigger = "approve"
	// OnApproveLater: a person approved a queued call; the record waits,
	// leased until the approval expires, for the call that consumes it.
	OnApproveLater Trigger = "approve_later"
	// OnDeny: a person or the policy said no.
	OnDeny Trigger = "deny"
	// OnNoAnswer: no one could be asked, the prompt was aborted or
	// killed, or a queued approval expired. Nobody said no.
	OnNoAnswer Trigger = "no_answer"
	// OnSucceeded: the tool ran and returned a result.
	OnSucceeded Trigger = "succeeded"
	// OnFailed: the tool ran and said no (isError).
	OnFailed Trigger = "failed"
	// OnNotSent: the request provably never reached the server.
	OnNotSent Trigger = "not_sent"
	// OnRefused: the server refused the request before the tool ran
	// (invalid arguments -32602, key required or invalid -31004).
	OnRefused Trigger = "refused"
	// OnAmbiguous: the request may have reached the tool and no outcome
	// came back (a deadline after the send, a connection lost mid-call).
	OnAmbiguous Trigger = "ambiguous"
	// OnLeaseExpired: the owner's lease ended before it recorded anything.
	OnLeaseExpired Trigger = "lease_expired"
	// OnOwnerDead: the owner's process is gone (same host, known at once).
	OnOwnerDead Trigger = "owner_dead"
	// OnResend: an UNKNOWN record is sent again to a key-aware server,
	// which answers a repeat with the first outcome; a take-over.
	OnResend Trigger = "resend"
	// OnNotRun: a reconciler proved that an UNKNOWN call never took effect
	// (Finding VerdictNotRun): the record becomes RETRYABLE and the next
	// call with the key runs it.
	OnNotRun Trigger = "not_run"
	// OnInconclusive: a reconciler looked at an UNKNOWN call and found no
	// evidence either way (Finding VerdictUnknown): the record stays
	// UNKNOWN and the attempt joins its history.
	OnInconclusive Trigger = "inconclusive"
)

// Triggers lists every trigger in a stable order.
var Triggers = []Trigger{
	OnClaim, OnClaimForApproval, OnApprove, OnApproveLater, OnDeny, OnNoAnswer,
	OnSucceeded, OnFailed, OnNotSent, OnRefused, OnAmbiguous,
	OnLeaseExpired, OnOwnerDead, OnResend, OnNotRun, OnInconclusive,
}

// none stands for "no record yet" (or a settled record past its retention)
// in the table.
const none State = ""

type edge struct {
	from State
	on   Trigger
}

// table is the state diagram of DESIGN.md, edge by edge. A pair that is not
// here is refused with ErrIllegalTransition.
var table = map[edge]State{
	{none, OnClaim}:                        StateProcessing,
	{none, OnClaimForApproval}:             StatePendingApproval,
	{StateRetryable, OnClaim}:              StateProcessing,
	{StateRetryable, OnClaimForApproval}:   StatePendingApproval,
	{StateRejected, OnClaim}:               StateProcessing,
	{StateRejected, OnClaimForApproval}:    StatePendingApproval,
	{StatePendingApproval, OnApprove}:      StateProcessing,
	{StatePendingApproval, OnApproveLater}: StatePendingApproval,
	{StatePendingApproval, OnDeny}:         StateDenied,
	{StateProcessing, OnDeny}:              StateDenied, // an upstream ledger (a proxy) denied it: nothing ran
	{StatePendingApproval, OnNoAnswer}:     StateRejected,
	{StatePendingApproval, OnLeaseExpired}: StateRejected,
	{StatePendingApproval, OnOwnerDead}:    StateRejected,
	{StateProcessing, OnSucceeded}:         StateSucceeded,
	{StateProcessing, OnFailed}:            StateFailed,
	{StateProcessing, OnNotSent}:           StateRetryable,
	{StateProcessing, OnRefused}:           StateRejected,
	{StateProcessing, OnAmbiguous}:         StateUnknown,
	{StateProcessing, OnLeaseExpired}:      StateUnknown,
	{StateProcessing, OnOwnerDead}:         StateUnknown,
	{StateUnknown, OnSucceeded}:            StateSucceeded, // reconciled (found), or the late result of the fenced owner
	{StateUnknown, OnFailed}:               StateFailed,
	{StateUnknown, OnNotRun}:               StateRetryable, // reconciled: provably not run
	{StateUnknown, OnInconclusive}:         StateUnknown,   // reconciled without evidence
	{StateUnknown, OnResend}:               StateProcessing,
}

// Next returns the state that on moves a record in from to, or an error
// wrapping ErrIllegalTransition. from is "" for a key with no live record.
func Next(from State, on Trigger) (State, error) {
	if to, ok := table[edge{from, on}]; ok {
		return to, nil
	}
	name := string(from)
	if from == none {
		name = "no record"
	}
	return "", fmt.Errorf("%w: %s on %s", ErrIllegalTransition, on, name)
}

// transitions is the table seen as edges between states, for
// CheckTransition; claims are not Transitions and are left out.
var transitions = func() map[[2]State]bool {
	m := make(map[[2]State]bool)
	for e, to := range table {
		if e.from != none && e.on != OnClaim && e.on != OnClaimForApproval {
			m[[2]State{e.from, to}] = true
		}
	}
	return m
}()

// CheckTransition returns nil when some event moves a record from from to
// to, and an error wrapping ErrIllegalTransition otherwise. Stores call it
// before they touch storage.
func CheckTransition(from, to State) error {
	if transitions[[2]State{from, to}] {
		return nil
	}
	return fmt.Errorf("%w: %s -> %s", ErrIllegalTransition, from, to)
}

// Action is what a caller does with the record its claim found.
type Action string

// The actions.
const (
	// ActWait: an owner is working on it; wait (bounded) for the outcome.
	ActWait Action = "wait"
	// ActReplay: it finished (SUCCEEDED or FAILED); answer with its result.
	ActReplay Action = "replay"
	// ActDenied: a person or the policy said no; answer with the denial.
	ActDenied Action = "denied"
	// ActReclaim: nothing ran (RETRYABLE, REJECTED); claim the key again.
	ActReclaim Action = "reclaim"
	// ActReconcile: it may have run (UNKNOWN, or a tombstone of the verify
	// policy); never run it again until it is reconciled.
	ActReconcile Action = "reconcile"
)

// Act says what a caller does with r, by its state.
func Act(r *Record) Action {
	if r.Tombstone {
		return ActReconcile
	}
	return RowOf(r.State).Act
}

// Explain describes r for a model, by its state: what the earlier call
// became and when, its key, and what to do next (never to re-issue a call
// that ran or may have run; ledger_status can be asked with the key).
func Explain(r *Record) string {
	if r == nil {
		return "No such call was found in this session."
	}
	if r.State == StatePendingApproval && !r.Tombstone {
		return AwaitingText(r, "")
	}
	var s strings.Builder
	fmt.Fprintf(&s, "The call of %s with these arguments (key %s) ", r.Tool, r.Key)
	switch {
	case r.Tombstone:
		fmt.Fprintf(&s, "was made on %s and its record has since expired, so whether it took effect can no longer be shown. A person must decide before it is sent again. Do not issue it again",
			stamp(r.CreatedAt))
	case r.State == StateSucceeded:
		fmt.Fprintf(&s, "already ran on %s and succeeded", stamp(r.CreatedAt))
		if r.Attempts > 1 {
			fmt.Fprintf(&s, " after %d attempts", r.Attempts)
		}
		s.WriteString("; its recorded result is returned. Do not issue it again")
	case r.State == StateFailed:
		fmt.Fprintf(&s, "already ran on %s and the tool reported an error; that result is returned. Do not issue the same call again; change the arguments if a different call is meant",
			stamp(r.CreatedAt))
	case r.State == StateProcessing:
		fmt.Fprintf(&s, "is still in progress (sent %s). Do not issue it again; its outcome will be recorded", stamp(r.CreatedAt))
	case r.State == StateDenied:
		fmt.Fprintf(&s, "was denied on %s", stamp(r.UpdatedAt))
		if r.Approval != nil && r.Approval.Reason != "" {
			fmt.Fprintf(&s, " (reason: %s)", OneLine(r.Approval.Reason, 200))
		}
		s.WriteString(". Do not issue it again")
	case r.State == StateRetryable && r.Reconciled != nil:
		fmt.Fprintf(&s, "was sent on %s and found not to have taken effect (reconciled by %s on %s); it may be sent again under the same key",
			stamp(r.CreatedAt), r.Reconciled.Method, stamp(r.Reconciled.At))
	case r.State == StateRetryable:
		fmt.Fprintf(&s, "was not delivered to the tool (first tried %s); it may be sent again under the same key", stamp(r.CreatedAt))
	case r.State == StateRejected:
		fmt.Fprintf(&s, "did not run (%s); nothing took effect, and the call may be made again", rejectedWhy(r))
	case r.State == StateUnknown || !r.State.Valid():
		fmt.Fprintf(&s, "was sent on %s but its outcome is unknown: it may or may not have taken effect. A person must reconcile it. Do not issue it again", stamp(r.CreatedAt))
	default:
		// A state with no wording of its own above reads its row's text.
		fmt.Fprintf(&s, "was made on %s, and %s", stamp(r.CreatedAt), RowOf(r.State).Means)
	}
	fmt.Fprintf(&s, ". To check on it, call ledger_status with key %q.", r.Key)
	return s.String()
}

// AwaitingText is what a model reads about r, a call that waits for a
// person (PENDING_APPROVAL); why, when not empty, says why an approval on
// it does not count. A model told "do not issue it again" would never make
// the call that runs it once approved; told only "try again" it would
// poll; so the text says to tell the user, ask ledger_status later, and
// call again once approved. A call already approved (a queued approval not
// yet used) is told to make the same call again.
func AwaitingText(r *Record, why string) string {
	var s strings.Builder
	if ap := r.Approval; ap != nil && ap.Decision != DecisionDenied && why == "" {
		fmt.Fprintf(&s, "Not done yet: the call of %s (key %s) was approved by %s on %s and has not run. "+
			"Make the same call again (same tool and arguments) and it runs once. To check on it, call ledger_status with key %q.",
			r.Tool, r.Key, OneLine(ap.By, 100), stamp(ap.At), r.Key)
		return s.String()
	}
	fmt.Fprintf(&s, "Not done yet: the call of %s (key %s) awaits a person's approval", r.Tool, r.Key)
	if !r.LeaseUntil.IsZero() {
		fmt.Fprintf(&s, " until %s", stamp(r.LeaseUntil))
	}
	s.WriteString(". Nothing has run")
	if why != "" {
		fmt.Fprintf(&s, "; the approval on it does not count: %s", OneLine(why, 200))
	}
	fmt.Fprintf(&s, ". Tell the user it waits for their approval (agentctl ledger approve %s, or the web console), "+
		"and do not look for another way to make it happen. Later, call ledger_status with key %q: once it says approved, "+
		"make the same call again (same tool and arguments) and it runs once; if it was denied or expired, it did not run.", r.Key, r.Key)
	return s.String()
}

func rejectedWhy(r *Record) string {
	switch r.ErrorKind {
	case KindApprovalExpired:
		return "no one approved it before the approval expired"
	case KindOwnerDead, KindLeaseExpired:
		return "the confirmation prompt ended without an answer"
	case KindNoAnswer:
		if r.ErrorMessage != "" {
			return "no one confirmed it: " + OneLine(r.ErrorMessage, 300)
		}
		return "no one confirmed it"
	case KindRefused, "jsonrpc_-32602":
		if r.ErrorMessage != "" {
			return "the server refused the arguments: " + OneLine(r.ErrorMessage, 200) + "; correct them before calling again"
		}
		return "the server refused the arguments; correct them before calling again"
	}
	// Every other REJECTED record is a refusal the server answered before
	// the tool ran (a JSON-RPC error, a key it will not take).
	if r.ErrorMessage != "" {
		return "the server refused the request: " + OneLine(r.ErrorMessage, 200) + "; correct it before calling again"
	}
	return "the server refused the request; correct it before calling again"
}

// stamp formats a time for a model: RFC 3339 in UTC, to the second.
func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// OneLine keeps free text (a person's reason, a server's message) from
// breaking the shape of a one-line message: whitespace folded, at most n
// runes, an ellipsis where it was cut.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

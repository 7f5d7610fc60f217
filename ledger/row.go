package ledger

import (
	"fmt"
	"strings"
)

// This file is what a state means, one row per state, for every consumer:
// the callers of each SDK, the server middleware, the proxy, the CLI and
// telemetry read the row of the state a call ended in instead of deciding
// on their own what that state means.

// The server error codes of the wire conventions (DESIGN.md, "Wire
// conventions"). Package wire re-exports them; they live here because the
// rows below name them and package ledger imports nothing of ours.
const (
	// CodeKeyReused: the key is bound to other arguments. Permanent.
	CodeKeyReused = -31001
	// CodeInProgress: the call is running, waits for a person, or did not
	// run and may be sent again; or the request's fence is stale.
	// Transient; data.retryAfterMs says when to ask again.
	CodeInProgress = -31002
	// CodeOutcomeUnknown: whether the call ran cannot be told. Never
	// retried; needs reconciliation.
	CodeOutcomeUnknown = -31003
	// CodeKeyRequired: the key is missing or breaks the key rules.
	// Permanent.
	CodeKeyRequired = -31004
)

// The data.reason values the rows answer with.
const (
	ReasonInProgress     = "in_progress"
	ReasonOutcomeUnknown = "outcome_unknown"
	// ReasonNotRun: nothing ran (the server's handler said so, or the
	// request never reached the tool); the same key may be sent again.
	ReasonNotRun = "not_run"
)

// The exit codes of agentctl (DESIGN.md, "agentctl").
const (
	ExitOK          = 0
	ExitFailed      = 1 // the tool said no (isError)
	ExitUsage       = 2 // bad usage or input, or arguments refused before the tool ran
	ExitDenied      = 3
	ExitUnknown     = 4 // outcome unknown or still in progress
	ExitUnreachable = 5 // nothing was sent
	ExitAwaiting    = 6
	ExitInterrupted = 130
)

// The reasons agentctl's --json errors give a call that ended in a state
// (Row.ExitReason), beside the exit code: a script branches on the reason,
// a shell on the code.
const (
	ExitReasonAwaiting    = "awaiting_approval"
	ExitReasonInProgress  = "in_progress"
	ExitReasonToolError   = "tool_error"
	ExitReasonNotSent     = "unreachable"
	ExitReasonRejected    = "rejected"
	ExitReasonUnconfirmed = "confirmation_needed"
	ExitReasonUnknown     = "outcome_unknown"
	ExitReasonDenied      = "denied"
)

// Row is everything a consumer needs to know about a call that ended in
// State.
type Row struct {
	State State
	// Act is what a caller does with a record it finds in State.
	Act Action
	// Final: the record is replayed as it is and never changes.
	Final bool
	// Ran says whether the tool ran: "yes", "no", or "maybe".
	Ran string
	// Outcome is the telemetry outcome of a call that ended in State
	// (OutcomeReplayed instead when it was answered from an earlier
	// record of a final state).
	Outcome Outcome
	// Code and Reason are the JSON-RPC error a key-aware server or a proxy
	// answers a keyed caller with, data.state naming State. Code 0: the
	// answer is a result (the stored one for SUCCEEDED and FAILED; an
	// isError result carrying the MetaError marker for DENIED and
	// REJECTED).
	Code   int64
	Reason string
	// Upstream is what an upstream ledger's answer in State (a proxy's
	// marker or error data) means for the caller's own PROCESSING record:
	// the trigger the caller records.
	Upstream Trigger
	// Exit is agentctl's exit code, and ExitReason the reason of its
	// --json error ("" for SUCCEEDED: a result, not an error).
	Exit       int
	ExitReason string
	// Means says in a few words what State means for whoever reads it, a
	// model or a person: whether the call ran, and what may be done with
	// it now. Meaning words one record; Means is the state's own text.
	Means string
}

// Whether the tool ran, in a row.
const (
	RanYes   = "yes"
	RanNo    = "no"
	RanMaybe = "maybe"
)

// rows has one row per state, in the order of States.
var rows = map[State]Row{
	StatePendingApproval: {Act: ActWait, Ran: RanNo, Outcome: OutcomeAwaiting,
		Code: CodeInProgress, Reason: ReasonInProgress, Upstream: OnNotSent, Exit: ExitAwaiting, ExitReason: ExitReasonAwaiting,
		Means: "it waits for a person's approval; nothing has run"},
	StateProcessing: {Act: ActWait, Ran: RanMaybe, Outcome: OutcomeInProgress,
		Code: CodeInProgress, Reason: ReasonInProgress, Upstream: OnAmbiguous, Exit: ExitUnknown, ExitReason: ExitReasonInProgress,
		Means: "it is still running"},
	StateSucceeded: {Act: ActReplay, Final: true, Ran: RanYes, Outcome: OutcomeSucceeded,
		Upstream: OnSucceeded, Exit: ExitOK,
		Means: "it ran and succeeded"},
	StateFailed: {Act: ActReplay, Final: true, Ran: RanYes, Outcome: OutcomeFailed,
		Upstream: OnFailed, Exit: ExitFailed, ExitReason: ExitReasonToolError,
		Means: "it ran and the tool reported an error"},
	StateRetryable: {Act: ActReclaim, Ran: RanNo, Outcome: OutcomeNotSent,
		Code: CodeInProgress, Reason: ReasonNotRun, Upstream: OnNotSent, Exit: ExitUnreachable, ExitReason: ExitReasonNotSent,
		Means: "it never reached the tool and will be sent again under the same key"},
	StateRejected: {Act: ActReclaim, Ran: RanNo, Outcome: OutcomeRejected,
		Upstream: OnRefused, Exit: ExitUsage, ExitReason: ExitReasonRejected,
		Means: "it did not run; nothing took effect and the call may be made again"},
	StateUnknown: {Act: ActReconcile, Ran: RanMaybe, Outcome: OutcomeUnknown,
		Code: CodeOutcomeUnknown, Reason: ReasonOutcomeUnknown, Upstream: OnAmbiguous, Exit: ExitUnknown, ExitReason: ExitReasonUnknown,
		Means: "its outcome is unknown: it may or may not have taken effect, and a person must reconcile it"},
	StateDenied: {Act: ActDenied, Final: true, Ran: RanNo, Outcome: OutcomeDenied,
		Upstream: OnDeny, Exit: ExitDenied, ExitReason: ExitReasonDenied,
		Means: "it was refused"},
}

func init() {
	for s, r := range rows {
		r.State = s
		rows[s] = r
	}
}

// RowOf is the row of s. A state that is not one of the eight (an
// upstream's unknown word, say) gets UNKNOWN's row: what cannot be read
// may have run.
func RowOf(s State) Row {
	if r, ok := rows[s]; ok {
		return r
	}
	return rows[StateUnknown]
}

// RowFor is the row of a call that ended in s, where kind says why it
// ended there (the record's error kind, or the reason of the server's
// last answer). Two kinds change what a person reads and does:
//
//   - A REJECTED record no one confirmed (KindNoAnswer, KindApprovalExpired,
//     or KindOwnerDead: the asking process died) reads
//     confirmation_needed, not rejected: the fix is an answer, not other
//     arguments. Nothing ran either way.
//   - A RETRYABLE record whose server last said the key is in progress
//     there (ReasonInProgress) is running at the server: it reads in
//     progress with PROCESSING's exit, since a new key would run it twice.
//     One that an upstream ledger holds for a person's approval
//     (UpstreamKind(StatePendingApproval)) reads awaiting approval, with
//     PENDING_APPROVAL's exit.
//
// Every other kind leaves RowOf(s).
func RowFor(s State, kind string) Row {
	r := RowOf(s)
	as := func(p Row) { r.Ran, r.Exit, r.ExitReason = p.Ran, p.Exit, p.ExitReason }
	switch {
	case s == StateRejected && (kind == KindNoAnswer || kind == KindApprovalExpired || kind == KindOwnerDead):
		r.ExitReason = ExitReasonUnconfirmed
	case s == StateRetryable && kind == ReasonInProgress:
		as(rows[StateProcessing])
	case s == StateRetryable && kind == UpstreamKind(StatePendingApproval):
		as(rows[StatePendingApproval])
	}
	return r
}

// UpstreamKind is the error kind of a caller's record that an upstream
// ledger's answer in s settled (a proxy's marker or error data).
func UpstreamKind(s State) string { return "upstream_" + strings.ToLower(string(s)) }

// Rows lists the rows in the order of States.
func Rows() []Row {
	out := make([]Row, 0, len(States))
	for _, s := range States {
		out = append(out, rows[s])
	}
	return out
}

// Upstream is what an upstream ledger's word that a call is in state s
// means for the caller's own record of it, which is PROCESSING: the
// trigger to record, and the state that makes. An unknown word is
// ambiguous.
func Upstream(s State) (Trigger, State) {
	on := RowOf(s).Upstream
	to, err := Next(StateProcessing, on)
	if err != nil {
		panic(fmt.Sprintf("ledger: the row of %s names %s, which does not leave PROCESSING", s, on))
	}
	return on, to
}

// The JSON-RPC request errors a server may answer a tools/call with
// before its tool runs.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
)

// Refusal is what a JSON-RPC error a server answered before its tool ran
// means for the record, on the client and at a server guard alike: a
// request error (-32700, -32600, -32601, -32602) is REJECTED, since the
// same request would be refused again and the key may come back
// corrected (-32602: ledger.KindRefused, the arguments; the others
// "jsonrpc_<code>"); -31002, in progress or not run, is RETRYABLE. ok is
// false for every other code, after which the tool may have run.
func Refusal(code int64) (on Trigger, kind string, ok bool) {
	switch code {
	case CodeInvalidParams:
		return OnRefused, KindRefused, true
	case CodeParseError, CodeInvalidRequest, CodeMethodNotFound:
		return OnRefused, fmt.Sprintf("jsonrpc_%d", code), true
	case CodeInProgress:
		return OnNotSent, "in_progress", true
	}
	return "", "", false
}

// RequestError reports whether code says the request itself was wrong
// (Refusal's REJECTED codes): a relay passes it on as the protocol error
// it is, since the server would answer the same again.
func RequestError(code int64) bool {
	on, _, ok := Refusal(code)
	return ok && on == OnRefused
}

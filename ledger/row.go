package ledger

import (
	"errors"
	"fmt"
	"strings"
)

// This file is what a state means, one row per state, for every consumer:
// the callers of each SDK, the server middleware, the proxy, the CLI and
// telemetry read the row of the state a call ended in instead of deciding
// on their own what that state means.

// The server error codes of the wire conventions (DESIGN.md, "Wire
// conventions"), defined once, here, because the rows below name them and
// package ledger imports nothing above it: the client, the server, the
// proxy and package retry all read these. They sit outside the JSON-RPC
// reserved range (-32768..-32000) and carry data.reason (wire.ErrorData).
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

// The values of data.reason.
const (
	// ReasonKeyReused (CodeKeyReused): the key is bound to other arguments.
	ReasonKeyReused = "key_reused"
	// ReasonInProgress (CodeInProgress): another request with the key is
	// running, or the call waits for a person.
	ReasonInProgress = "in_progress"
	// ReasonStaleFence (CodeInProgress): the request's fence is below the
	// one the server saw for the key: a newer owner holds it.
	ReasonStaleFence = "stale_fence"
	// ReasonOutcomeUnknown (CodeOutcomeUnknown).
	ReasonOutcomeUnknown = "outcome_unknown"
	// ReasonKeyRequired (CodeKeyRequired): the request has no key.
	ReasonKeyRequired = "key_required"
	// ReasonKeyInvalid (CodeKeyRequired): the key breaks the key rules.
	ReasonKeyInvalid = "key_invalid"
	// ReasonNotRun (CodeInProgress): nothing ran (the server's handler
	// said so: its transaction rolled back, its database was busy; or the
	// request never reached the tool); send the same key again.
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

// The errors a call that did not complete is told by, one per state it
// can stand in (Row.Err), matched with errors.Is. Package caller and its
// adapters return them wrapped, with the key and the model's text.
var (
	// ErrOutcomeUnknown: the call may or may not have taken effect. The
	// record is UNKNOWN and must be reconciled; it is never re-run blindly.
	ErrOutcomeUnknown = errors.New("ledger: outcome unknown")
	// ErrDenied: a person or the policy refused the call; nothing ran.
	ErrDenied = errors.New("ledger: call denied")
	// ErrRejected: nothing ran and nothing will: the server refused the
	// request before the tool ran, or no one confirmed the call. The
	// record is REJECTED and the same key may be used again.
	ErrRejected = errors.New("ledger: call rejected before it ran")
	// ErrNotSent: the request provably never reached the tool (the record
	// is RETRYABLE), or the ledger could not record the claim (there may be
	// no record). The same call may be repeated.
	ErrNotSent = errors.New("ledger: request not sent")
	// ErrAwaitingApproval: the call waits for a person's approval. Nothing
	// ran.
	ErrAwaitingApproval = errors.New("ledger: call awaits a person's approval")
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
	// Waits is what the owner of a record in State waits for under its
	// lease: WaitsTool (it sent the call and waits for the tool's answer),
	// WaitsPerson (a person's approval or denial), or "" when no owner
	// holds the record.
	Waits string
	// IsError: when the answer to a call in State is a result (Code 0),
	// it is an isError result: the tool's own (FAILED), or the one that
	// says nothing ran (DENIED, REJECTED).
	IsError bool
	// Verdict is the reconciler's finding that moves an UNKNOWN record to
	// State (found: SUCCEEDED, failed: FAILED, not_run: RETRYABLE;
	// unknown: it stays UNKNOWN), or "" when no finding leads to State.
	// It is read from the table.
	Verdict Verdict
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
	// Err is the error a call that did not complete in State is told by
	// (nil for SUCCEEDED and FAILED: the tool's answer is a result).
	Err error
	// Exit is agentctl's exit code, and ExitReason the reason of its
	// --json error ("" for SUCCEEDED: a result, not an error).
	Exit       int
	ExitReason string
	// Means says in a few words what State means for whoever reads it, a
	// model or a person: whether the call ran, and what may be done with
	// it now. Meaning words one record; Means is the state's own text.
	Means string
	// Again is what a model reads of an earlier call in State that is
	// made again now under its key (the states a caller reclaims), after
	// "An earlier call of TOOL with these arguments (key K, first sent T)";
	// "" for the states that are never made again.
	Again string
}

// Whether the tool ran, in a row.
const (
	RanYes   = "yes"
	RanNo    = "no"
	RanMaybe = "maybe"
)

// What a leased record waits for, in a row.
const (
	WaitsTool   = "tool"
	WaitsPerson = "person"
)

// rows has one row per state, in the order of States.
var rows = map[State]Row{
	StatePendingApproval: {Act: ActWait, Ran: RanNo, Waits: WaitsPerson, Outcome: OutcomeAwaiting,
		Code: CodeInProgress, Reason: ReasonInProgress, Upstream: OnNotSent, Err: ErrAwaitingApproval, Exit: ExitAwaiting, ExitReason: ExitReasonAwaiting,
		Means: "it waits for a person's approval; nothing has run"},
	StateProcessing: {Act: ActWait, Ran: RanMaybe, Waits: WaitsTool, Outcome: OutcomeInProgress,
		Code: CodeInProgress, Reason: ReasonInProgress, Upstream: OnAmbiguous, Err: ErrInProgress, Exit: ExitUnknown, ExitReason: ExitReasonInProgress,
		Means: "it is still running"},
	StateSucceeded: {Act: ActReplay, Final: true, Ran: RanYes, Outcome: OutcomeSucceeded,
		Upstream: OnSucceeded, Exit: ExitOK,
		Means: "it ran and succeeded"},
	StateFailed: {Act: ActReplay, Final: true, Ran: RanYes, IsError: true, Outcome: OutcomeFailed,
		Upstream: OnFailed, Exit: ExitFailed, ExitReason: ExitReasonToolError,
		Means: "it ran and the tool reported an error"},
	StateRetryable: {Act: ActReclaim, Ran: RanNo, Outcome: OutcomeNotSent,
		Code: CodeInProgress, Reason: ReasonNotRun, Upstream: OnNotSent, Err: ErrNotSent, Exit: ExitUnreachable, ExitReason: ExitReasonNotSent,
		Means: "it never reached the tool and will be sent again under the same key",
		Again: "never reached the tool; it is sent again under the same key"},
	StateRejected: {Act: ActReclaim, Ran: RanNo, IsError: true, Outcome: OutcomeRejected,
		Upstream: OnRefused, Err: ErrRejected, Exit: ExitUsage, ExitReason: ExitReasonRejected,
		Means: "it did not run; nothing took effect and the call may be made again",
		Again: "did not run; it is made again under the same key"},
	StateUnknown: {Act: ActReconcile, Ran: RanMaybe, Outcome: OutcomeUnknown,
		Code: CodeOutcomeUnknown, Reason: ReasonOutcomeUnknown, Upstream: OnAmbiguous, Err: ErrOutcomeUnknown, Exit: ExitUnknown, ExitReason: ExitReasonUnknown,
		Means: "its outcome is unknown: it may or may not have taken effect, and a person must reconcile it"},
	StateDenied: {Act: ActDenied, Final: true, Ran: RanNo, IsError: true, Outcome: OutcomeDenied,
		Upstream: OnDeny, Err: ErrDenied, Exit: ExitDenied, ExitReason: ExitReasonDenied,
		Means: "it was refused"},
}

func init() {
	for s, r := range rows {
		r.State = s
		rows[s] = r
	}
	for _, v := range Verdicts {
		on, err := v.trigger()
		if err != nil {
			panic(err)
		}
		to, err := Next(StateUnknown, on)
		if err != nil {
			panic(fmt.Sprintf("ledger: the verdict %s names %s, which does not leave UNKNOWN", v, on))
		}
		r := rows[to]
		r.Verdict = v
		rows[to] = r
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

// errOrder is the order StateOfError tries the rows in: an error that
// wraps the errors of two states stands in the first, so a call that may
// have run is never told it did not (UNKNOWN before the others), and a
// wait that ended in another failure is told that failure (PROCESSING
// last). The rows it leaves out follow in the order of States.
var errOrder = []State{StateUnknown, StatePendingApproval, StateDenied, StateRejected, StateRetryable, StateProcessing}

// StateOfError is the state whose row's Err err wraps (errors.Is); ok is
// false when it wraps none.
func StateOfError(err error) (s State, ok bool) {
	if err == nil {
		return "", false
	}
	for _, s := range append(append([]State(nil), errOrder...), States...) {
		if e := rows[s].Err; e != nil && errors.Is(err, e) {
			return s, true
		}
	}
	return "", false
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

package client

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// What a call's failure means, a person's decisions and the keys a caller
// puts in its context are package caller's, the same for every client
// adapter; they are named here too so go-sdk code needs one import.

var (
	ErrOutcomeUnknown    = caller.ErrOutcomeUnknown
	ErrDenied            = caller.ErrDenied
	ErrRejected          = caller.ErrRejected
	ErrNotSent           = caller.ErrNotSent
	ErrArgumentsTooLarge = caller.ErrArgumentsTooLarge
	ErrAwaitingApproval  = caller.ErrAwaitingApproval
	ErrNotQueued         = caller.ErrNotQueued
	ErrSameApprover      = caller.ErrSameApprover
	ErrOtherPolicy       = caller.ErrOtherPolicy
)

type (
	// Error is a call that did not complete: the same type in every
	// adapter ([caller.Error]; mcpgo.Error too), so errors.As finds it
	// whichever SDK made the call. Its fields: Tool, and Key, the key of
	// the call's record; State, the record's state when there is one;
	// Text, a short text a model can read (what happened, when, what to
	// do next); Err, the cause, whose chain holds the sentinel
	// (ErrOutcomeUnknown, ErrDenied, ledger.ErrInProgress …).
	Error = caller.Error
	// Queued is what a queued record's owner says about the call
	// ([ledger.Queued]): its Requester and PolicyVersion, whether a person
	// Approved it already, and whether its policy requires an approver
	// other than the requester (Distinct, when DistinctKnown).
	Queued = caller.Queued
	// UpstreamApproval is beside ErrAwaitingApproval when the call waits
	// for a person at the server it was sent to (an agentctl proxy that
	// queued it): Key is the call's key in that server's ledger
	// ([caller.UpstreamApproval]).
	UpstreamApproval = caller.UpstreamApproval
	// ReplayMarker is the value of _meta["io.github.mcpledger/replay"] on
	// a replayed result ([wire.Replay]): Key, State, FirstAt, Attempts,
	// and Compacted and Reconciled when they apply.
	ReplayMarker = wire.Replay
)

const (
	// KindReconciled is the ErrorKind of a record a person reconciled.
	KindReconciled = ledger.KindReconciled
	// MetaReconciled marks the result of a reconciled record.
	MetaReconciled = wire.MetaReconciled
)

// WithKey sets the idempotency key of the next calls made with ctx
// (caller.WithKey, which every adapter reads). It is the strongest
// identity: the same key is the same operation. The key must satisfy
// ledger.ValidateKey; CallTool rejects it otherwise.
func WithKey(ctx context.Context, key string) context.Context { return caller.WithKey(ctx, key) }

// WithChain marks the entry of a call chain (a request id, a business
// operation id). Calls made with ctx derive their keys from the chain id,
// the tool and the argument fingerprint, so replaying the chain after a
// crash or a re-plan derives the same keys.
func WithChain(ctx context.Context, id string) context.Context { return caller.WithChain(ctx, id) }

// WithNewKey asks for a new operation: the next call gets a fresh key and
// skips the re-planning window. Use it when a second identical effect is
// truly wanted.
func WithNewKey(ctx context.Context) context.Context { return caller.WithNewKey(ctx) }

// WithConfirmer sets the confirmer for calls made with ctx, in place of
// Options.Confirmer. A proxy uses it to ask the host of each request (an
// MCP elicitation); its answer to a question asked earlier also settles an
// operation left PENDING_APPROVAL by that question.
func WithConfirmer(ctx context.Context, c confirm.Confirmer) context.Context {
	return caller.WithConfirmer(ctx, c)
}

// Decision is a person's answer to a queued call, given from any process
// (the CLI's ledger approve and deny, the web console). It has the fields
// of [caller.Decision] and converts to it.
type Decision struct {
	// Approve, else deny (a denial needs a Reason).
	Approve bool
	// ForSession also approves later calls of the same tool in the
	// record's session (tenant, session, tool) until Expires, while the
	// policy keeps its version.
	ForSession bool
	// By is who decides (a verified identity: the OS account, the name
	// of a console approver's token); Via is where ("agentctl",
	// "console").
	By     string
	Via    string
	Reason string
	// For is how long a session approval stands (the call's approval
	// expiry when zero).
	For time.Duration
	// DistinctApprover refuses an approval by the requester, as does the
	// policy the call was queued under when it requires another approver
	// (its record says so; the call enforces it again when it runs).
	DistinctApprover bool
	// PolicyVersion is the version of the policy DistinctApprover comes
	// from. A call queued by an older build does not say what its policy
	// requires: when PolicyVersion is set and is not the version the call
	// was queued under, an approval by the requester is refused with
	// ErrOtherPolicy rather than recorded for a call that may refuse it.
	PolicyVersion string
	Now           func() time.Time // time.Now when nil
}

// Decide records d on the queued call id: an approval stays on the record,
// PENDING_APPROVAL until the same expiry, for the next call with the key
// to consume; a denial makes it DENIED, and that call gets the denial
// ([caller.Decide]).
func Decide(ctx context.Context, st ledger.Store, id ledger.ID, d Decision) (*ledger.Record, error) {
	return caller.Decide(ctx, st, id, caller.Decision(d))
}

// Reconcile settles an UNKNOWN record once someone found out what
// happened; see guard.Reconcile.
func Reconcile(ctx context.Context, st ledger.Store, id ledger.ID, r Reconciliation) (*ledger.Record, error) {
	return guard.Reconcile(ctx, st, id, guard.Reconciliation(r))
}

// Reconciliation is what someone found out about an UNKNOWN call. It has
// the fields of [guard.Reconciliation] and converts to it.
type Reconciliation struct {
	// As is ledger.StateSucceeded (found), ledger.StateFailed (the tool
	// refused it) or ledger.StateRetryable (provably not run: the next
	// call with the key runs it).
	As ledger.State
	// By and Note say who found out and how; At is when (now when zero),
	// for the text kept on the record (the ledger stamps the resolution
	// with its own clock).
	By, Note string
	At       time.Time
	// Method is how it was found out (ledger.MethodPerson when empty).
	Method ledger.Method
	// Result is what every later duplicate gets back: the tool's own
	// result as its SDK's type (a go-sdk or mcp-go CallToolResult, encoded
	// as JSON) or raw JSON. Nil stores one text result that says who
	// reconciled it and why (isError for FAILED), marked in _meta. A
	// RETRYABLE record keeps no result.
	Result any
}

// QueuedCall reports whether r is a queued call (caller.QueuedCall).
func QueuedCall(r *ledger.Record) (Queued, bool) { return caller.QueuedCall(r) }

// Failed is the error of a call that failed with err and was recorded
// with rep (caller.Failed).
func Failed(rep ledger.Report, err error) error { return caller.Failed(rep, err) }

// StateOf is the state a call that failed with err stands in
// (caller.StateOf).
func StateOf(err error) (ledger.State, bool) { return caller.StateOf(err) }

// ReplayResult decodes a finished record's result and adds the replay marker to
// its _meta. Apart from that one _meta entry the result marshals to the
// stored JSON.
func ReplayResult(rec *ledger.Record) (*mcp.CallToolResult, error) {
	return caller.Replay[*mcp.CallToolResult](codec{}, rec)
}

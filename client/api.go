package client

import (
	"context"

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
	// Error is a call that did not complete (caller.Error).
	Error = caller.Error
	// Decision is a person's answer to a queued call (caller.Decision).
	Decision = caller.Decision
	// Queued is what a queued record's owner says about the call.
	Queued = caller.Queued
	// UpstreamApproval is beside ErrAwaitingApproval when the call waits
	// for a person at the server it was sent to.
	UpstreamApproval = caller.UpstreamApproval
	// ReplayMarker is the value of _meta["io.github.mcpledger/replay"] on a
	// replayed result.
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

// Decide records d on the queued call id (caller.Decide).
func Decide(ctx context.Context, st ledger.Store, id ledger.ID, d Decision) (*ledger.Record, error) {
	return caller.Decide(ctx, st, id, d)
}

// Reconcile settles an UNKNOWN record once someone found out what
// happened; see guard.Reconcile.
func Reconcile(ctx context.Context, st ledger.Store, id ledger.ID, r Reconciliation) (*ledger.Record, error) {
	return guard.Reconcile(ctx, st, id, r)
}

// Reconciliation is what someone found out about an UNKNOWN call.
type Reconciliation = guard.Reconciliation

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
	res, err := codec{}.Decode(rec.Result)
	if err != nil {
		return nil, err
	}
	codec{}.Mark(res, wire.Marker(rec))
	return res, nil
}

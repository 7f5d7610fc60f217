package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// DefaultTenant is the tenant of every call when Options.Tenant is nil.
const DefaultTenant = guard.DefaultTenant

// Defaults for the zero fields of Options.
const (
	DefaultInProgressWait = guard.DefaultInProgressWait
	DefaultRetryAfter     = guard.DefaultRetryAfter
)

// Options configures a Guard. The zero value (or nil) guards every tool not
// annotated read-only, for a single tenant, with the ledger's default lease
// and retention.
type Options struct {
	// Tenant names the tenant a call belongs to, typically from the
	// authenticated identity in req.Extra.TokenInfo. An error is returned to
	// the client as is (return a *jsonrpc.Error to choose the code) and
	// nothing is stored. Nil means DefaultTenant for every call.
	Tenant func(ctx context.Context, req *mcp.CallToolRequest) (string, error)

	// Layer names whose records the guard keeps (default
	// ledger.LayerServer), so a client or a proxy that shares the ledger
	// keeps its own record of the same key apart.
	Layer string

	// Guard decides whether calls of a tool without an explicit Tools entry
	// need a key. Nil means GuardedByDefault: every tool not annotated
	// readOnlyHint.
	Guard func(tool *mcp.Tool) bool

	// Tools holds per-tool settings by tool name.
	Tools ledger.Tools

	// InProgressWait bounds how long a duplicate waits for the execution it
	// duplicates before it gets -31002 in_progress (DefaultInProgressWait
	// when zero). It is shorter than the client's default (30 s) on
	// purpose: a server holds a request, a connection and a handler slot
	// while it waits, so it answers -31002 with retryAfterMs soon and lets
	// the client, which waits without holding anything of the server's,
	// ask again under the same key.
	InProgressWait time.Duration
	// RetryAfter is the retryAfterMs advice sent with -31002
	// (DefaultRetryAfter when zero).
	RetryAfter time.Duration

	// Lease is the PROCESSING lease of a running handler, renewed every
	// Lease/3 while it runs (ledger.DefaultLease when zero). A server that
	// dies mid-handler leaves its records PROCESSING until the lease ends;
	// then they become UNKNOWN.
	Lease time.Duration
	// Retention is how long results are kept for replay
	// (ledger.DefaultRetention when zero); per tool in ToolPolicy.
	Retention time.Duration
	// SweepEvery is the period of Run (Lease/4 when zero, at least 100ms).
	SweepEvery time.Duration
	// SweepLimit is the most records one sweep purges, so a sweep does
	// bounded work however large the backlog; the rest waits for the next
	// sweep (ledger.DefaultSweepLimit when zero).
	SweepLimit int

	// MaxResult is the stored size past which a result is compacted
	// (ledger.DefaultMaxResult when zero).
	MaxResult int

	// Owner names this server process in leases. Empty means
	// process.NewOwner with a random label, unique per process, so a
	// restarted process never mistakes a dead predecessor's lease for its
	// own, and a duplicate on this host knows at once when the process that
	// held a call is gone.
	Owner string

	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Logger receives one line per stored outcome and every ledger error
	// (slog.Default when nil). Keys appear as ledger.ShortHash.
	Logger *slog.Logger

	// MeterProvider and TracerProvider receive the metrics and spans of
	// every guarded call (the global OpenTelemetry providers when nil);
	// see package telemetry. When the store is a ledger.EventLog, each
	// guarded call also leaves an event there, written in the background
	// (call Close to write the last ones).
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider

	// Reconcilers holds a Reconciler per tool name. When a call meets an
	// UNKNOWN record of its key (its server died mid-handler, its handler
	// failed), the tool's reconciler looks the key up in the server's own
	// data, within ReconcileBudget, and its finding settles the record
	// (ledger.Resolve): found, the call gets that result as a replay;
	// failed, the failure; not run, the handler runs now under the same
	// key; anything else, -31003 as before, with the attempt in the
	// record's history. Run's sweep also tries them on the UNKNOWN records
	// due.
	Reconcilers map[string]Reconciler
	// ReconcileBudget bounds one reconciler call
	// (guard.DefaultReconcileBudget when zero).
	ReconcileBudget time.Duration
}

// Reconciler looks an UNKNOWN operation up in the server's own data (the
// payments table by idempotency key) and says what it found
// ([guard.Reconciler]):
//
//	func(ctx context.Context, req ReconcileRequest) (ledger.Finding, error)
//
// The finding's verdict is ledger.VerdictFound with the result every
// repeat gets back, VerdictFailed, VerdictNotRun when the effect is
// provably absent (the next call with the key runs it), or VerdictUnknown
// with what it saw. An error, or no answer within ReconcileBudget, leaves
// the record UNKNOWN.
type Reconciler = guard.Reconciler

// ReconcileRequest is what a Reconciler is asked about
// ([guard.ReconcileRequest]): the operation's Tenant, Tool and Key, and
// its Arguments (json.RawMessage; as the request sent them when a call
// met the record, as the record keeps them, redacted, in Run's sweep).
type ReconcileRequest = guard.ReconcileRequest

// ToolPolicy is the per-tool configuration of a Guard: the settings every
// side shares ([ledger.ToolSettings]). Of them the Guard reads Retention,
// Reuse, Exclude and Compact, and ReadOnly (no key needed) and Keyed (a key
// needed even when the tool is annotated read-only).
type ToolPolicy = ledger.ToolSettings

// GuardedByDefault requires a key for every tool not annotated readOnlyHint.
// Annotations are the server's own, so they are trusted here.
func GuardedByDefault(tool *mcp.Tool) bool {
	return tool.Annotations == nil || !tool.Annotations.ReadOnlyHint
}

// withDefaults returns a copy of o with every zero field filled.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Guard == nil {
		c.Guard = GuardedByDefault
	}
	if c.Owner == "" {
		c.Owner = guard.NewOwner("server")
	}
	if c.Retention <= 0 {
		c.Retention = ledger.DefaultRetention
	}
	return c
}

// core is o in package guard's terms; guard fills the other zero fields.
func (o Options) core() *guard.Options {
	return &guard.Options{
		Layer:           o.Layer,
		Tools:           o.Tools,
		InProgressWait:  o.InProgressWait,
		RetryAfter:      o.RetryAfter,
		Lease:           o.Lease,
		Retention:       o.Retention,
		SweepEvery:      o.SweepEvery,
		SweepLimit:      o.SweepLimit,
		MaxResult:       o.MaxResult,
		Owner:           o.Owner,
		Now:             o.Now,
		Logger:          o.Logger,
		MeterProvider:   o.MeterProvider,
		TracerProvider:  o.TracerProvider,
		Reconcilers:     o.Reconcilers,
		ReconcileBudget: o.ReconcileBudget,
	}
}

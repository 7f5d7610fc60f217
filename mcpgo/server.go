package mcpgo

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// ServerOptions configure a Guard. The zero value (or nil) guards every
// tool not annotated read-only, for a single tenant, with the ledger's
// default lease and retention.
type ServerOptions struct {
	// Tenant names the tenant a call belongs to, typically from the
	// authenticated identity the HTTP context function put in ctx. An
	// error is returned to the client and nothing is stored. Nil means
	// "default" for every call.
	Tenant func(ctx context.Context, req mcp.CallToolRequest) (string, error)
	// Layer names whose records the guard keeps (default
	// ledger.LayerServer; see server.Options.Layer).
	Layer string
	// Tools holds per-tool settings: ReadOnly tools need no key; Retention,
	// Reuse, Exclude and Compact apply as on the go-sdk server.
	Tools ledger.Tools
	// InProgressWait bounds how long a duplicate waits for the execution
	// it duplicates (5s when zero); RetryAfter is the advice sent when it
	// gives up (1s when zero).
	InProgressWait time.Duration
	RetryAfter     time.Duration
	// Lease of a running handler, renewed while it runs
	// (ledger.DefaultLease when zero).
	Lease time.Duration
	// Retention of results for replay (ledger.DefaultRetention when zero).
	Retention time.Duration
	// MaxResult is the stored size past which a result is compacted
	// (ledger.DefaultMaxResult when zero).
	MaxResult int
	// SweepEvery is the period of Run (Lease/4 when zero, at least
	// 100ms); SweepLimit the most records one sweep purges
	// (ledger.DefaultSweepLimit when zero).
	SweepEvery time.Duration
	SweepLimit int
	// Owner names this process in leases (a random label per process when
	// empty, so a duplicate on this host knows at once when it is gone).
	Owner  string
	Now    func() time.Time
	Logger *slog.Logger
	// MeterProvider and TracerProvider receive the metrics and spans of
	// every guarded call (the global OpenTelemetry providers when nil), as
	// on the go-sdk server (package telemetry).
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// Reconcilers holds a reconciler per tool name, which a call that
	// meets an UNKNOWN record of its key, and Run's sweep, ask about it
	// (see server.Options.Reconcilers); ReconcileBudget bounds one call
	// (guard.DefaultReconcileBudget when zero).
	Reconcilers     map[string]guard.Reconciler
	ReconcileBudget time.Duration
}

// Guard is server-side idempotency for one mcp-go server: its middleware
// runs each guarded tools/call once per (tenant, layer, tool, key), on the
// one server core (package guard) that package server runs for go-sdk, and
// replays the stored outcome to every duplicate. It only translates. It is
// safe for concurrent use.
type Guard struct {
	core *guard.Guard
	opts ServerOptions
}

// NewGuard returns a Guard recording in store. opts may be nil.
func NewGuard(store ledger.Store, opts *ServerOptions) *Guard {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.Owner == "" {
		o.Owner = guard.NewOwner("mcpgo-server")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	core := guard.New(store, &guard.Options{
		Layer: o.Layer, Tools: o.Tools,
		InProgressWait: o.InProgressWait, RetryAfter: o.RetryAfter,
		Lease: o.Lease, Retention: o.Retention, SweepEvery: o.SweepEvery, SweepLimit: o.SweepLimit,
		MaxResult: o.MaxResult, Owner: o.Owner, Now: o.Now, Logger: o.Logger,
		MeterProvider: o.MeterProvider, TracerProvider: o.TracerProvider,
		Reconcilers: o.Reconcilers, ReconcileBudget: o.ReconcileBudget,
	})
	o.Retention = core.Options().Retention
	return &Guard{core: core, opts: o}
}

// Core is the SDK-neutral guard this adapter translates for.
func (g *Guard) Core() *guard.Guard { return g.core }

// Run sweeps the ledger every ServerOptions.SweepEvery until ctx ends
// (guard.Guard.Run): dead leases become UNKNOWN, expired records are
// purged. Run it once per process, beside the server.
func (g *Guard) Run(ctx context.Context) error { return g.core.Run(ctx) }

// Sweep runs one pass of Run and reports how many records it expired and
// purged.
func (g *Guard) Sweep(ctx context.Context) (expired, purged int) { return g.core.Sweep(ctx) }

// Close writes the call events still queued (guard.Guard.Close).
func (g *Guard) Close(ctx context.Context) error { return g.core.Close(ctx) }

// Capability is the experimental capability a key-aware server
// advertises, to merge into the map given to server.WithExperimental.
// With a Tenant function it also says it keeps keys per tenant
// (wire.CapabilityTenants), so clients send their keys as they are.
func (g *Guard) Capability() map[string]any {
	return map[string]any{wire.Capability: guard.Capability(g.opts.Retention, g.opts.Tenant != nil)}
}

// ServerOptions are the options that install the Guard on
// server.NewMCPServer: the tool middleware and the capability. mcp-go's
// WithExperimental replaces what an earlier one set, so a server with
// experimental capabilities of its own passes WithExperimental once, with
// Capability merged in, and WithToolHandlerMiddleware(g.Middleware()).
func (g *Guard) ServerOptions() []server.ServerOption {
	return []server.ServerOption{
		server.WithToolHandlerMiddleware(g.Middleware()),
		server.WithExperimental(g.Capability()),
	}
}

// Middleware guards tools/call. mcp-go runs it after it found the tool and
// validated the arguments (with WithInputSchemaValidation), so an unknown
// tool or malformed call never leaves a record.
func (g *Guard) Middleware() server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !g.guarded(ctx, req.Params.Name) {
				return next(ctx, req)
			}
			return g.call(ctx, next, req)
		}
	}
}

// guarded reports whether calls of tool need a key: every tool but those
// trusted configuration or the server's own annotation call read-only.
func (g *Guard) guarded(ctx context.Context, tool string) bool {
	switch set := g.opts.Tools.For(tool); {
	case set.ReadOnly:
		return false
	case set.Keyed:
		return true
	}
	s := server.ServerFromContext(ctx)
	if s == nil {
		return true
	}
	t := s.GetTool(tool)
	if t == nil {
		return true
	}
	ro := t.Tool.Annotations.ReadOnlyHint
	return ro == nil || !*ro
}

func (g *Guard) call(ctx context.Context, next server.ToolHandlerFunc, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := g.core.Call(ctx, g.request(ctx, req), func(ctx context.Context) guard.End {
		return end(next(ctx, req))
	})
	switch {
	case a.Err != nil:
		return nil, refuse(ctx, a.Err)
	case a.Replay != nil:
		return replayResult(a.Replay)
	}
	res, _ := a.Reply.(*mcp.CallToolResult)
	if res == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	return res, nil
}

// request is req in the core's terms.
func (g *Guard) request(ctx context.Context, req mcp.CallToolRequest) *guard.Request {
	p := req.Params
	r := &guard.Request{Tool: p.Name, Arguments: p.RawArguments}
	if len(r.Arguments) == 0 {
		r.Arguments, r.ArgumentsErr = wire.MarshalArgs(p.Arguments)
	}
	if p.Meta != nil {
		r.Meta = p.Meta.AdditionalFields
	}
	if s := server.ClientSessionFromContext(ctx); s != nil {
		r.Session = s.SessionID()
	}
	if g.opts.Tenant != nil {
		r.Tenant = func(ctx context.Context) (string, error) { return g.opts.Tenant(ctx, req) }
	}
	return r
}

// end is what the handler returned, in the core's terms. mcp-go sends
// every handler error as -32603, so a Go error carries no code of its own.
func end(res *mcp.CallToolResult, err error) guard.End {
	if res == nil && err == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	e := guard.End{Err: err}
	if res != nil {
		e.Reply, e.IsError, e.NeedsInput, e.Text = res, res.IsError, res.NeedsInput(), firstText(res)
		e.Encode = func() (json.RawMessage, error) { return json.Marshal(res) }
	}
	return e
}

// firstText returns the first text content (the core cuts it to size).
func firstText(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			return t.Text
		}
	}
	return ""
}

// replayResult is the stored result with the replay marker in its _meta.
func replayResult(rec *ledger.Record) (*mcp.CallToolResult, error) {
	raw, err := guard.Replay(rec)
	if err != nil {
		return nil, err
	}
	return mcp.ParseCallToolResult(&raw)
}

// KeyFromContext returns the idempotency key of the guarded call a handler
// runs, for its downstream API and the outbox (guard.KeyFromContext). It
// reports false outside a guarded call.
func KeyFromContext(ctx context.Context) (string, bool) { return guard.KeyFromContext(ctx) }

// FenceFromContext returns the fencing token the client sent with the
// guarded call a handler runs (0 when none).
func FenceFromContext(ctx context.Context) (wire.Fence, bool) { return guard.FenceFromContext(ctx) }

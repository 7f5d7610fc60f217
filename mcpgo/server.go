package mcpgo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/caller"
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
	// Owner names this process in leases (a random label per process when
	// empty, so a duplicate on this host knows at once when it is gone).
	Owner  string
	Now    func() time.Time
	Logger *slog.Logger
}

// Guard is server-side idempotency for one mcp-go server: its middleware
// runs each guarded tools/call once per (tenant, layer, tool, key), on the same
// lifecycle and wire conventions as package server for go-sdk, and replays
// the stored outcome to every duplicate. It is safe for concurrent use.
type Guard struct {
	lc   *ledger.Lifecycle
	opts ServerOptions
	// fences holds the highest fencing token seen per key.
	fences caller.FenceBook
}

// NewGuard returns a Guard recording in store. opts may be nil.
func NewGuard(store ledger.Store, opts *ServerOptions) *Guard {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.InProgressWait <= 0 {
		o.InProgressWait = 5 * time.Second
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	if o.Lease <= 0 {
		o.Lease = ledger.DefaultLease
	}
	if o.Retention <= 0 {
		o.Retention = ledger.DefaultRetention
	}
	if o.MaxResult <= 0 {
		o.MaxResult = ledger.DefaultMaxResult
	}
	if o.Owner == "" {
		o.Owner = ledger.NewOwner("mcpgo-server-" + randomHex(4))
	}
	if o.Layer == "" {
		o.Layer = ledger.LayerServer
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{
		lc:   &ledger.Lifecycle{Store: store, Owner: o.Owner, Lease: o.Lease, Wait: o.InProgressWait, Now: o.Now, Logger: o.Logger},
		opts: o,
	}
}

// Capability is the experimental capability a key-aware server
// advertises, to merge into the map given to server.WithExperimental.
// With a Tenant function it also says it keeps keys per tenant
// (wire.CapabilityTenants), so clients send their keys as they are.
func (g *Guard) Capability() map[string]any {
	v := map[string]any{"version": wire.CapabilityVersion, "retentionSeconds": int64(g.opts.Retention / time.Second)}
	if g.opts.Tenant != nil {
		v[wire.CapabilityTenants] = true
	}
	return map[string]any{wire.Capability: v}
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

// gcall is a guarded call that passed every check.
type gcall struct {
	id       ledger.ID
	claim    ledger.ClaimRequest
	settings ledger.ToolSettings
	fence    wire.Fence
}

func (g *Guard) call(ctx context.Context, next server.ToolHandlerFunc, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := g.prepare(ctx, req)
	if err != nil {
		return nil, refuse(ctx, err)
	}
	if r := g.fences.Check(c.id, c.fence); r != nil {
		return nil, refuse(ctx, r)
	}
	var (
		reply    *mcp.CallToolResult
		replyErr error
	)
	rec, ran, err := g.lc.Do(ctx, c.claim, func(ctx context.Context, _ ledger.Lease) ledger.Report {
		var rep ledger.Report
		rep, reply, replyErr = g.execute(caller.WithHandler(ctx, c.id.Key, c.fence), next, req, c)
		return rep
	})
	if ran {
		if err != nil {
			g.opts.Logger.ErrorContext(ctx, "mcpledger mcpgo server: storing outcome failed; lease expiry will make the record UNKNOWN",
				"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "err", err)
		}
		return reply, refuse(ctx, replyErr)
	}
	if err := caller.Repeat(ctx, c.id, rec, err, g.opts.RetryAfter); err != nil {
		return nil, refuse(ctx, err)
	}
	return replayResult(rec)
}

// prepare checks a guarded call and builds its claim. A non-nil error goes
// back to the client; nothing is stored.
func (g *Guard) prepare(ctx context.Context, req mcp.CallToolRequest) (*gcall, error) {
	p := req.Params
	raw := p.RawArguments
	if len(raw) == 0 {
		var err error
		if raw, err = caller.MarshalArgs(p.Arguments); err != nil {
			return nil, caller.InvalidParams(fmt.Sprintf("tool %q: %v", p.Name, err))
		}
	}
	args, err := caller.DecodeArgs(raw)
	if err != nil {
		return nil, caller.InvalidParams(fmt.Sprintf("tool %q: %v", p.Name, err))
	}
	var meta map[string]any
	if p.Meta != nil {
		meta = p.Meta.AdditionalFields
	}
	key, err := caller.KeyOf(meta, args)
	if err != nil {
		return nil, caller.KeyRefusal(p.Name, "", err)
	}
	fence, err := caller.FenceOf(meta)
	if err != nil {
		return nil, caller.KeyRefusal(p.Name, key, err)
	}
	tenant := "default"
	if g.opts.Tenant != nil {
		if tenant, err = g.opts.Tenant(ctx, req); err != nil {
			return nil, err
		}
		if err := ledger.ValidateTenant(tenant); err != nil {
			return nil, fmt.Errorf("mcpgo: tenant of tool %q: %w", p.Name, err)
		}
	}
	set := g.opts.Tools.For(p.Name)
	fp, err := ledger.Fingerprint(raw, set.Exclude...)
	if err != nil {
		return nil, caller.InvalidParams(fmt.Sprintf("tool %q: %v", p.Name, err))
	}
	red, err := set.Redact.Redact(raw)
	if err != nil {
		return nil, caller.InvalidParams(fmt.Sprintf("tool %q: %v", p.Name, err))
	}
	retention := set.Retention
	if retention <= 0 {
		retention = g.opts.Retention
	}
	id := ledger.ID{Tenant: tenant, Layer: g.opts.Layer, Tool: p.Name, Key: key}
	c := &gcall{id: id, settings: set, fence: fence, claim: ledger.ClaimRequest{
		ID: id, Fingerprint: fp, Arguments: red, Retention: retention, ReusePolicy: set.Reuse,
	}}
	if s := server.ClientSessionFromContext(ctx); s != nil {
		c.claim.Session = s.SessionID()
	}
	c.claim.TraceID, c.claim.SpanID = caller.TraceParent(meta)
	return c, nil
}

// execute runs the handler as the winner of the claim and says what
// happened: the report to store and the reply.
func (g *Guard) execute(ctx context.Context, next server.ToolHandlerFunc, req mcp.CallToolRequest, c *gcall) (ledger.Report, *mcp.CallToolResult, error) {
	res, panicked, err := invoke(ctx, next, req)
	rep := ledger.Report{Attempts: 1, On: ledger.OnAmbiguous}
	switch {
	case panicked != nil:
		g.opts.Logger.ErrorContext(ctx, "mcpledger mcpgo server: handler panicked; record left UNKNOWN",
			"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "panic", fmt.Sprint(panicked.value), "stack", string(panicked.stack))
		rep.ErrorKind, rep.ErrorMessage = "panic", fmt.Sprint(panicked.value)
		return rep, nil, caller.Unknown(c.id.Tool, c.id.Key, "the handler panicked")
	case errors.Is(err, ledger.ErrNotRun):
		// The handler knows nothing happened: the next attempt with the
		// key runs it.
		rep.On, rep.ErrorKind, rep.ErrorMessage = ledger.OnNotSent, "not_run", ledger.OneLine(err.Error(), 500)
		return rep, nil, caller.Refuse(wire.CodeInProgress, wire.ReasonNotRun, c.id.Key, string(ledger.StateRetryable),
			fmt.Sprintf("tool %q: nothing happened (%s); send the same request again with the same key", c.id.Tool, ledger.OneLine(err.Error(), 300)), g.opts.RetryAfter)
	case err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		rep.ErrorKind, rep.ErrorMessage = "canceled", ledger.OneLine(err.Error(), 500)
		return rep, nil, caller.Unknown(c.id.Tool, c.id.Key, fmt.Sprintf("the handler stopped with its context (%v)", err))
	case err != nil:
		// mcp-go turns every handler error into -32603: the handler may
		// have acted before it failed.
		rep.ErrorKind, rep.ErrorMessage = "handler_error", ledger.OneLine(err.Error(), 500)
		return rep, nil, caller.Unknown(c.id.Tool, c.id.Key, fmt.Sprintf("the handler failed (%v)", err))
	}
	if res == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	if res.NeedsInput() {
		// The handler asks for input before it acts; the continuation comes
		// back with the same key and claims the record again.
		rep.On, rep.ErrorKind = ledger.OnNotSent, "input_required"
		return rep, res, nil
	}
	raw, compacted, err := g.encode(c, res)
	if err != nil {
		rep.ErrorKind, rep.ErrorMessage = "unstorable", err.Error()
		return rep, res, nil
	}
	rep.On, rep.Result, rep.Compacted = ledger.OnSucceeded, raw, compacted
	if res.IsError {
		rep.On, rep.ErrorKind = ledger.OnFailed, "tool_error"
	}
	return rep, res, nil
}

type panicked struct {
	value any
	stack []byte
}

// invoke calls the handler and recovers a panic: the record becomes
// UNKNOWN and the client gets an error, instead of the panic taking down
// every call in flight.
func invoke(ctx context.Context, next server.ToolHandlerFunc, req mcp.CallToolRequest) (res *mcp.CallToolResult, p *panicked, err error) {
	defer func() {
		if r := recover(); r != nil {
			p = &panicked{value: r, stack: debug.Stack()}
		}
	}()
	res, err = next(ctx, req)
	return res, nil, err
}

// encode is the result as stored (mcp-go's encoding), compacted past the
// size limit by the tool's compaction.
func (g *Guard) encode(c *gcall, res *mcp.CallToolResult) (json.RawMessage, bool, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, false, fmt.Errorf("mcpgo: encode result of %q: %w", c.id.Tool, err)
	}
	return caller.Stored(raw, g.opts.MaxResult, c.settings.Compact)
}

// replayResult is the stored result with the replay marker in its _meta.
func replayResult(rec *ledger.Record) (*mcp.CallToolResult, error) {
	if text, ok := caller.Missing(rec); ok {
		return &mcp.CallToolResult{
			Result:  mcp.Result{Meta: mcp.NewMetaFromMap(map[string]any{wire.MetaReplay: caller.Marker(rec)})},
			Content: []mcp.Content{mcp.NewTextContent(text)}, IsError: true,
		}, nil
	}
	raw, err := caller.Mark(rec)
	if err != nil {
		return nil, err
	}
	return mcp.ParseCallToolResult(&raw)
}

// KeyFromContext returns the idempotency key of the guarded call a handler
// runs, for its downstream API and the outbox (caller.KeyFromHandler). It
// reports false outside a guarded call.
func KeyFromContext(ctx context.Context) (string, bool) { return caller.KeyFromHandler(ctx) }

// FenceFromContext returns the fencing token the client sent with the
// guarded call a handler runs (0 when none).
func FenceFromContext(ctx context.Context) (wire.Fence, bool) { return caller.FenceFromHandler(ctx) }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("mcpgo: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

package server

import (
	"context"
	"sync"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Guard is server-side idempotency for one go-sdk server: its Middleware
// runs each guarded tools/call once per (tenant, layer, tool, key) and replays the
// stored outcome to every duplicate. A Guard is safe for concurrent use.
type Guard struct {
	store ledger.Store
	lc    *ledger.Lifecycle
	opts  Options
	tel   *telemetry.Telemetry
	// fences holds the highest fencing token seen per key.
	fences caller.FenceBook

	// schemas maps *mcp.Tool to *schemaEntry. Tools are immutable once
	// registered, so a pointer identifies one schema; a replaced tool gets a
	// new pointer and a new entry.
	schemas sync.Map
}

// New returns a Guard that records operations in store. opts may be nil.
func New(store ledger.Store, opts *Options) *Guard {
	o := opts.withDefaults()
	g := &Guard{store: store, opts: o, tel: newTelemetry(store, o)}
	g.lc = &ledger.Lifecycle{Store: store, Owner: o.Owner, Lease: o.Lease, Wait: o.InProgressWait, Now: o.Now, Logger: o.Logger,
		Waiting: func(ctx context.Context, _ *ledger.Record) { telemetry.CallFrom(ctx).InProgressWait(ctx) },
		Ended: func(ctx context.Context, on ledger.Trigger, tool string, n int) {
			kind := ledger.KindOwnerDead
			if on == ledger.OnLeaseExpired {
				kind = ledger.KindLeaseExpired
			}
			g.tel.EnteredUnknown(ctx, tool, kind, n)
		},
	}
	return g
}

// Owner is the lease owner this Guard writes into PROCESSING records.
func (g *Guard) Owner() string { return g.opts.Owner }

// Middleware returns the receiving middleware to add with
// (*mcp.Server).AddReceivingMiddleware. It guards tools/call and adds the
// idempotency capability to initialize and server/discover results; every
// other method passes through.
//
// Add it after any middleware that authenticates or rewrites requests, so
// that it wraps them and sees the final request.
func (g *Guard) Middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call":
				if creq, ok := req.(*mcp.CallToolRequest); ok && creq.Params != nil {
					return g.callTool(ctx, next, creq)
				}
			case "initialize", "server/discover":
				res, err := next(ctx, method, req)
				if err == nil {
					g.advertise(res)
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

// guarded reports whether calls of tool need a key.
func (g *Guard) guarded(tool *mcp.Tool, pol ToolPolicy) bool {
	switch {
	case pol.ReadOnly:
		return false
	case pol.Keyed:
		return true
	}
	return g.opts.Guard(tool)
}

func (g *Guard) callTool(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest) (mcp.Result, error) {
	pol := g.opts.Tools.For(req.Params.Name)
	if pol.ReadOnly {
		return next(ctx, "tools/call", req)
	}
	tool, err := lookup(ctx, next, req)
	if err != nil {
		return nil, err
	}
	if tool == nil || !g.guarded(tool, pol) {
		// An unknown tool gets the SDK's own error; nothing is stored.
		return next(ctx, "tools/call", req)
	}
	ctx, tc := g.tel.Start(telemetry.Extract(ctx, req.Params.Meta), req.Params.Name)
	tc.SetSession(sessionOf(req))
	tc.SetPeer(peerOf(req))
	c, err := g.prepare(ctx, req, tool, pol)
	var res mcp.Result
	if err == nil {
		res, err = g.run(ctx, next, req, c)
	}
	tc.End(ctx, result(tc, c, res, err))
	return res, err
}

// run claims the operation through the lifecycle: the winner executes the
// handler under a renewed lease, every duplicate follows the stored record
// and is answered by the table's action for it.
func (g *Guard) run(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest, c *call) (mcp.Result, error) {
	if err := g.checkFence(c); err != nil {
		return nil, err
	}
	retention := c.policy.Retention
	if retention <= 0 {
		retention = g.opts.Retention
	}
	var (
		reply    mcp.Result
		replyErr error
	)
	rec, ran, err := g.lc.Do(ctx, ledger.ClaimRequest{
		ID:          c.id,
		Session:     c.session,
		Fingerprint: c.fingerprint,
		Arguments:   c.arguments,
		Retention:   retention,
		ReusePolicy: c.policy.Reuse,
		TraceID:     c.traceID,
		SpanID:      c.spanID,
	}, func(ctx context.Context, l ledger.Lease) ledger.Report {
		var rep ledger.Report
		rep, reply, replyErr = g.execute(ctx, next, req, c)
		return rep
	})
	if ran {
		if err != nil {
			g.opts.Logger.ErrorContext(ctx, "mcpledger server: storing outcome failed; lease expiry will make the record UNKNOWN",
				"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "err", err)
		}
		return reply, replyErr
	}
	if err := caller.Repeat(ctx, c.id, rec, err, g.opts.RetryAfter); err != nil {
		g.log(ctx, "refused: "+err.Error(), c, rec)
		return nil, rpcError(err)
	}
	g.log(ctx, "replay", c, rec)
	return replay(rec)
}

// checkFence refuses a request whose fencing token is stale: lower than
// one this server already saw for the key in the same scope, so its sender
// lost the key to a newer owner. The newest tokens live in memory,
// bounded; a restart forgets them, and the key's record still answers
// every repeat.
func (g *Guard) checkFence(c *call) error {
	if r := g.fences.Check(c.id, c.fence); r != nil {
		return refusal(r)
	}
	return nil
}

func (g *Guard) log(ctx context.Context, msg string, c *call, rec *ledger.Record) {
	args := []any{"tool", c.id.Tool, "tenant", c.id.Tenant, "key", ledger.ShortHash(c.id.Key)}
	if rec != nil {
		args = append(args, "state", rec.State)
	}
	g.opts.Logger.DebugContext(ctx, "mcpledger server: "+msg, args...)
}

package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Guard is server-side idempotency for one go-sdk server: its Middleware
// runs each guarded tools/call once per (tenant, tool, key) and replays the
// stored outcome to every duplicate. A Guard is safe for concurrent use.
type Guard struct {
	store ledger.Store
	opts  Options
	tel   *telemetry.Telemetry

	// schemas maps *mcp.Tool to *schemaEntry. Tools are immutable once
	// registered, so a pointer identifies one schema; a replaced tool gets a
	// new pointer and a new entry.
	schemas sync.Map
}

// New returns a Guard that records operations in store. opts may be nil.
func New(store ledger.Store, opts *Options) *Guard {
	o := opts.withDefaults()
	return &Guard{store: store, opts: o, tel: newTelemetry(store, o)}
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
	switch pol.Mode {
	case ModeGuard:
		return true
	case ModeSkip:
		return false
	}
	return g.opts.Guard(tool)
}

func (g *Guard) callTool(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest) (mcp.Result, error) {
	pol := g.opts.Tools[req.Params.Name]
	if pol.Mode == ModeSkip {
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
	c, err := g.prepare(ctx, req, tool, pol)
	var res mcp.Result
	if err == nil {
		res, err = g.run(ctx, next, req, c)
	}
	tc.End(ctx, result(tc, c, res, err))
	return res, err
}

// maxReclaims bounds how often one request re-claims a record that went
// back to RETRYABLE under it (an input-required round or a rejection by
// another request's handler).
const maxReclaims = 3

// run claims the operation and either executes it (the winner) or follows
// the stored record (every duplicate).
func (g *Guard) run(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest, c *call) (mcp.Result, error) {
	retention := c.policy.Retention
	if retention <= 0 {
		retention = g.opts.Retention
	}
	for range maxReclaims {
		cl, err := g.store.Claim(ctx, ledger.ClaimRequest{
			ID:          c.id,
			Session:     c.session,
			Fingerprint: c.fingerprint,
			Arguments:   c.arguments,
			Owner:       g.opts.Owner,
			Lease:       g.opts.Lease,
			Retention:   retention,
			ReusePolicy: c.policy.Reuse,
			TraceID:     c.traceID,
			SpanID:      c.spanID,
		})
		if errors.Is(err, ledger.ErrKeyReused) {
			g.log(ctx, "key reused", c, nil)
			return nil, wireError(codeKeyReused, reasonKeyReused, c.id.Key, stateOf(cl.Record),
				fmt.Sprintf("tool %q: idempotency key was first used with other arguments; nothing was run (use a new key for a different request)", c.id.Tool), 0)
		}
		if err != nil {
			return nil, fmt.Errorf("server: claiming %q: %w", c.id.Tool, err)
		}
		if cl.Won {
			return g.execute(ctx, next, req, c)
		}
		res, again, err := g.follow(ctx, c, cl.Record)
		if !again {
			return res, err
		}
	}
	return nil, wireError(codeInProgress, reasonInProgress, c.id.Key, string(ledger.StateRetryable),
		fmt.Sprintf("tool %q: operation is being retried by other requests; try again", c.id.Tool), g.opts.RetryAfter)
}

func stateOf(r *ledger.Record) string {
	if r == nil {
		return ""
	}
	return string(r.State)
}

// follow answers a duplicate from the stored record, waiting a bounded time
// while the record is still being executed. again reports that the record
// went back to RETRYABLE and the caller should claim it.
func (g *Guard) follow(ctx context.Context, c *call, rec *ledger.Record) (res mcp.Result, again bool, err error) {
	expired := false
	deadline := time.Now().Add(g.opts.InProgressWait)
	for {
		if rec.Tombstone {
			return nil, false, wireError(codeOutcomeUnknown, reasonOutcomeUnknown, c.id.Key, string(rec.State),
				fmt.Sprintf("tool %q: this key was used before and its record has expired; reconcile it before reusing the key", c.id.Tool), 0)
		}
		switch rec.State {
		case ledger.StateSucceeded, ledger.StateFailed, ledger.StateDenied:
			g.log(ctx, "replay", c, rec)
			r, err := replay(rec)
			if err != nil {
				return nil, false, err
			}
			return r, false, nil
		case ledger.StateUnknown:
			g.log(ctx, "outcome unknown", c, rec)
			return nil, false, unknownError(c, rec)
		case ledger.StateRetryable:
			return nil, true, nil
		}
		if !rec.State.Waiting() {
			return nil, false, fmt.Errorf("server: record of %q is in unexpected state %s", c.id.Tool, rec.State)
		}
		// A lease that has ended belongs to a dead owner: turn it UNKNOWN now
		// instead of making the duplicate wait for the next sweep.
		if rec.State == ledger.StateProcessing && !expired && !rec.LeaseUntil.IsZero() && rec.LeaseUntil.Before(g.opts.Now()) {
			expired = true
			n, err := g.store.ExpireLeases(ctx)
			if err != nil {
				return nil, false, fmt.Errorf("server: expiring leases: %w", err)
			}
			g.tel.EnteredUnknown(ctx, "", ledger.KindLeaseExpired, n)
			if rec, err = g.store.Get(ctx, c.id); err != nil {
				return nil, false, fmt.Errorf("server: reading %q: %w", c.id.Tool, err)
			}
			continue
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			g.log(ctx, "in progress", c, rec)
			return nil, false, wireError(codeInProgress, reasonInProgress, c.id.Key, string(rec.State),
				fmt.Sprintf("tool %q: an earlier request with this key is still running; retry with the same key", c.id.Tool), g.opts.RetryAfter)
		}
		// Wait past the lease end too, so a dead owner's record is expired
		// here rather than reported as in progress.
		if !rec.LeaseUntil.IsZero() {
			if untilLease := rec.LeaseUntil.Sub(g.opts.Now()) + time.Millisecond; untilLease < wait {
				wait = max(untilLease, time.Millisecond)
			}
		}
		telemetry.CallFrom(ctx).InProgressWait(ctx)
		wctx, cancel := context.WithTimeout(ctx, wait)
		latest, err := g.store.Wait(wctx, c.id)
		cancel()
		if latest != nil {
			rec = latest
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return nil, false, fmt.Errorf("server: waiting for %q: %w", c.id.Tool, err)
			}
		}
	}
}

func unknownError(c *call, rec *ledger.Record) error {
	why := "its earlier execution may or may not have taken effect"
	if rec.ErrorKind != "" {
		why += " (" + rec.ErrorKind + ")"
	}
	return wireError(codeOutcomeUnknown, reasonOutcomeUnknown, c.id.Key, string(rec.State),
		fmt.Sprintf("tool %q: %s; it will not run again until the operation is reconciled", c.id.Tool, why), 0)
}

func (g *Guard) log(ctx context.Context, msg string, c *call, rec *ledger.Record) {
	args := []any{"tool", c.id.Tool, "tenant", c.id.Tenant, "key", ledger.ShortHash(c.id.Key)}
	if rec != nil {
		args = append(args, "state", rec.State)
	}
	g.opts.Logger.DebugContext(ctx, "mcpledger server: "+msg, args...)
}

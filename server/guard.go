package server

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Guard is server-side idempotency for one go-sdk server: its Middleware
// runs each guarded tools/call once per (tenant, layer, tool, key) and replays the
// stored outcome to every duplicate. It is go-sdk's adapter of package
// guard, which decides; the Guard only translates. A Guard is safe for
// concurrent use.
type Guard struct {
	core *guard.Guard
	opts Options

	// schemas maps *mcp.Tool to *schemaEntry. Tools are immutable once
	// registered, so a pointer identifies one schema; a replaced tool gets a
	// new pointer and a new entry.
	schemas sync.Map
}

// New returns a Guard that records operations in store. opts may be nil.
func New(store ledger.Store, opts *Options) *Guard {
	o := opts.withDefaults()
	return &Guard{core: guard.New(store, o.core()), opts: o}
}

// Core is the SDK-neutral guard this adapter translates for.
func (g *Guard) Core() *guard.Guard { return g.core }

// Owner is the lease owner this Guard writes into PROCESSING records.
func (g *Guard) Owner() string { return g.core.Owner() }

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
	a := g.core.Call(ctx, g.request(req, tool), func(ctx context.Context) guard.End {
		return end(next(ctx, "tools/call", req))
	})
	switch {
	case a.Err != nil:
		return nil, rpcError(a.Err)
	case a.Replay != nil:
		return replay(a.Replay)
	}
	res, _ := a.Reply.(mcp.Result)
	if res == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	return res, nil
}

// request is req in the core's terms.
func (g *Guard) request(req *mcp.CallToolRequest, tool *mcp.Tool) *guard.Request {
	p := req.Params
	r := &guard.Request{
		Tool:      p.Name,
		Meta:      p.Meta,
		Arguments: p.Arguments,
		Peer:      peerOf(req),
		Check:     func(args map[string]any) error { return g.validate(tool, args) },
	}
	r.Session, r.ProtocolVersion = sessionOf(req)
	if g.opts.Tenant != nil {
		r.Tenant = func(ctx context.Context) (string, error) { return g.opts.Tenant(ctx, req) }
	}
	return r
}

// encoder returns the JSON of r, for the core to store.
func encoder(r *mcp.CallToolResult) func() (json.RawMessage, error) {
	return func() (json.RawMessage, error) { return json.Marshal(r) }
}

// Package ledgertools serves the ledger to the model as two read-only MCP
// tools on a go-sdk server: ledger_status (what became of a call) and
// ledger_list (this session's calls). What they answer is package
// planner's (planner.Tools); this package only speaks go-sdk.
//
//	srv := ledgertools.NewServer(store, "acme", "session-1", nil)
//	st, ct := mcp.NewInMemoryTransports()
//	// serve srv on st; list the session on ct beside the real server's
package ledgertools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
)

// ScopeFunc says whose ledger a tool call may read: the caller's tenant and
// session. A proxy derives them from its own configuration or from the
// request's session; every read is confined to them.
type ScopeFunc func(ctx context.Context, req *mcp.CallToolRequest) (tenant, session string, err error)

// Options configures the ledger tools; nil means the defaults.
type Options struct {
	// Exclude is planner.Tools.Exclude: per tool, the extra argument
	// fields the calls' fingerprints leave out.
	Exclude map[string][]string
	// Layer is the layer whose records the tools read (default
	// ledger.LayerClient).
	Layer string
}

// Add adds ledger_status and ledger_list to s. Both are read-only and see
// only the records of the tenant and session scope returns for the call: a
// record of another tenant or session is "not found", even by its exact
// key.
func Add(s *mcp.Server, store ledger.Store, scope ScopeFunc, o *Options) {
	if s == nil || store == nil || scope == nil {
		panic("ledgertools: Add needs a server, a store and a scope")
	}
	if o == nil {
		o = &Options{}
	}
	h := handlers{tools: &planner.Tools{Store: store, Exclude: o.Exclude, Layer: o.Layer}, scope: scope}
	no := false // the hints a reader of the ledger leaves false
	readOnly := &mcp.ToolAnnotations{
		ReadOnlyHint:    true,
		IdempotentHint:  true,
		DestructiveHint: &no,
		OpenWorldHint:   &no,
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:        planner.StatusTool,
		Title:       planner.StatusTitle,
		Description: planner.StatusDescription,
		Annotations: readOnly,
	}, h.status)
	mcp.AddTool(s, &mcp.Tool{
		Name:        planner.ListTool,
		Title:       planner.ListTitle,
		Description: planner.ListDescription,
		InputSchema: planner.ListInputSchema(),
		Annotations: readOnly,
	}, h.list)
}

// NewServer is an MCP server holding only the ledger tools, fixed to one
// tenant and session. Mount it in-process over mcp.NewInMemoryTransports or
// serve it over stdio.
func NewServer(store ledger.Store, tenant, session string, o *Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpledger-ledger", Version: "0.1.0"}, nil)
	Add(s, store, func(context.Context, *mcp.CallToolRequest) (string, string, error) {
		return tenant, session, nil
	}, o)
	return s
}

type handlers struct {
	tools *planner.Tools
	scope ScopeFunc
}

func (h handlers) scopeOf(ctx context.Context, req *mcp.CallToolRequest) (planner.Scope, error) {
	tenant, session, err := h.scope(ctx, req)
	if err != nil {
		return planner.Scope{}, fmt.Errorf("ledgertools: scope: %w", err)
	}
	return planner.Scope{Tenant: tenant, Session: session}, nil
}

func (h handlers) status(ctx context.Context, req *mcp.CallToolRequest, in planner.StatusInput) (*mcp.CallToolResult, planner.StatusOutput, error) {
	sc, err := h.scopeOf(ctx, req)
	if err != nil {
		return nil, planner.StatusOutput{}, err
	}
	msg, out, err := h.tools.Status(ctx, sc, in)
	if err != nil {
		return nil, planner.StatusOutput{}, err
	}
	return text(msg), out, nil
}

func (h handlers) list(ctx context.Context, req *mcp.CallToolRequest, in planner.ListInput) (*mcp.CallToolResult, planner.ListOutput, error) {
	sc, err := h.scopeOf(ctx, req)
	if err != nil {
		return nil, planner.ListOutput{}, err
	}
	msg, out, err := h.tools.List(ctx, sc, in)
	if err != nil {
		return nil, planner.ListOutput{}, err
	}
	return text(msg), out, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

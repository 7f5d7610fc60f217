package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// orderIn is the input of the test tool "create_order".
type orderIn struct {
	Item string `json:"item"`
	Qty  int    `json:"qty" jsonschema:"how many"`
	// The schema declares the key argument, as DESIGN.md allows.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

type orderOut struct {
	OrderID string `json:"order_id"`
	Run     int64  `json:"run"`
}

type handlerFunc func(ctx context.Context, req *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error)

// rig is one guarded server with a create_order tool (not read-only) and a
// list_orders tool (read-only), backed by a real SQLite ledger.
type rig struct {
	t     *testing.T
	store ledger.Store
	srv   *mcp.Server
	guard *server.Guard
	runs  atomic.Int64 // executions of create_order's handler
	// handle, when set, replaces create_order's default behaviour. It runs
	// after runs was incremented.
	handle handlerFunc
}

func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newRig(t *testing.T, store ledger.Store, opts *server.Options) *rig {
	t.Helper()
	if store == nil {
		store = openStore(t)
	}
	if opts == nil {
		opts = &server.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	r := &rig{t: t, store: store}
	r.srv = mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "v1"}, nil)
	mcp.AddTool(r.srv, &mcp.Tool{Name: "create_order"}, func(ctx context.Context, req *mcp.CallToolRequest, in orderIn) (*mcp.CallToolResult, orderOut, error) {
		n := r.runs.Add(1)
		if r.handle != nil {
			return r.handle(ctx, req, in)
		}
		return nil, orderOut{OrderID: "ord-" + in.Item, Run: n}, nil
	})
	mcp.AddTool(r.srv, &mcp.Tool{Name: "list_orders", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no orders"}}}, nil, nil
		})
	r.guard = server.New(store, opts)
	r.srv.AddReceivingMiddleware(r.guard.Middleware())
	return r
}

// connect opens a new client session to the rig's server over in-memory
// transports.
func (r *rig) connect() *mcp.ClientSession {
	return connectTo(r.t, r.srv, nil)
}

func connectTo(t testing.TB, srv *mcp.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server Connect: %v", err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v1"}, copts)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client Connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// callKey calls tool with fresh params and a fresh _meta holding key (no
// key when empty).
func callKey(ctx context.Context, cs *mcp.ClientSession, tool, key string, args any) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if key != "" {
		p.Meta = mcp.Meta{wire.MetaKey: key}
	}
	return cs.CallTool(ctx, p)
}

// wireErr returns the JSON-RPC code and data.reason of err.
func wireErr(err error) (code int64, reason string, retryAfterMs int64) {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return 0, "", 0
	}
	var d struct {
		Reason       string `json:"reason"`
		RetryAfterMs int64  `json:"retryAfterMs"`
	}
	if len(je.Data) > 0 {
		if err := json.Unmarshal(je.Data, &d); err != nil {
			return je.Code, "", 0
		}
	}
	return je.Code, d.Reason, d.RetryAfterMs
}

// replayOf returns the replay marker of a result, or nil for a fresh one.
func replayOf(t testing.TB, res *mcp.CallToolResult) *wire.Replay {
	t.Helper()
	v, ok := res.Meta[wire.MetaReplay]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal replay marker: %v", err)
	}
	var rp wire.Replay
	if err := json.Unmarshal(b, &rp); err != nil {
		t.Fatalf("decode replay marker %s: %v", b, err)
	}
	return &rp
}

// body is a result without its _meta, for comparing a replay with the
// first result.
func body(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	cp := *res
	cp.Meta = nil
	b, err := json.Marshal(&cp)
	if err != nil {
		t.Fatalf("marshal result: %v", err)
	}
	return string(b)
}

func tenantRecords(t testing.TB, st ledger.Store, tenant string) []*ledger.Record {
	t.Helper()
	page, err := st.List(context.Background(), ledger.Filter{Tenant: tenant, Limit: ledger.MaxPageSize})
	if err != nil {
		t.Fatalf("List(%q): %v", tenant, err)
	}
	return page.Records
}

// waitFor polls cond until it holds or the deadline passes. Only for
// conditions the code under test reaches by its own timers (lease renewal,
// sweeps).
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

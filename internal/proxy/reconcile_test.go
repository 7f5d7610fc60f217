package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// till is an upstream that ignores keys: pay runs every time; find, the
// probe, answers from the keys pay was called with; note has no probe.
type till struct {
	srv   *mcp.Server
	mu    sync.Mutex
	paid  map[string]bool // guarded by mu
	pays  atomic.Int32
	finds atomic.Int32
}

func newTill() *till {
	u := &till{paid: map[string]bool{}}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "till", Version: "v1"}, nil)
	obj := map[string]any{"type": "object"}
	u.srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.pays.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
	})
	u.srv.AddTool(&mcp.Tool{Name: "note", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted"}}}, nil
	})
	u.srv.AddTool(&mcp.Tool{Name: "find", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.finds.Add(1)
			var in struct {
				Ref string `json:"ref"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			u.mu.Lock()
			ok := u.paid[in.Ref]
			u.mu.Unlock()
			if !ok {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no payment " + in.Ref}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid " + in.Ref}}}, nil
		})
	return u
}

func (u *till) transport(ctx context.Context) (mcp.Transport, error) {
	ct, st := mcp.NewInMemoryTransports()
	if _, err := u.srv.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

const tillPolicy = `{"version": 1, "rules": [{"tool": "*", "action": "allow"}],
 "reconcile": [{"tool": "pay", "probe": "find", "arguments": {"ref": "{{.Key}}"}, "absent": "not_run", "quiet": "1m"}]}`

// strandProxyUnknown leaves key of tool UNKNOWN in the proxy's layer, as a
// call whose answer the proxy lost does.
func strandProxyUnknown(t *testing.T, st ledger.Store, tool, key string) ledger.ID {
	t.Helper()
	ctx := context.Background()
	id := ledger.ID{Tenant: "default", Layer: ledger.LayerProxy, Tool: tool, Key: key}
	fp, err := args.Fingerprint(json.RawMessage(`{"amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: json.RawMessage(`{"amount":5}`), Owner: "lost-proxy", Lease: time.Minute})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown,
		Owner: "lost-proxy", Fence: cl.Record.Fence, ErrorKind: "ambiguous"}); err != nil {
		t.Fatalf("Transition to UNKNOWN = %v", err)
	}
	return id
}

func stateOf(t *testing.T, st ledger.Store, id ledger.ID) ledger.State {
	t.Helper()
	rec, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s) = %v", id.Key, err)
	}
	return rec.State
}

// newTillProxy is a proxy in front of a fresh till, with the till policy,
// over a SQLite ledger on clock, reconciling only when asked.
func newTillProxy(t *testing.T, clock *ledgertest.Clock, tune func(*proxy.Options)) (*proxy.Proxy, *till, ledger.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	pol, err := confirm.Parse([]byte(tillPolicy))
	if err != nil {
		t.Fatalf("confirm.Parse = %v", err)
	}
	u := newTill()
	o := &proxy.Options{Policy: pol, SweepEvery: -1, ReconcileEvery: -1, ReconcileLimit: 2, Now: clock.Now,
		Client: &client.Options{Retry: fastRetry, Now: clock.Now}}
	if tune != nil {
		tune(o)
	}
	return startProxy(t, st, u.transport, o), u, st
}

// One pass of the proxy's reconciliation probes the due UNKNOWN records
// of the tools with a probe, however many UNKNOWN records of other tools
// are due before them: found becomes SUCCEEDED at once; absent stays
// UNKNOWN within the quiet period, then becomes RETRYABLE. The call never
// runs again.
func TestProxySweepReconcilesByProbe(t *testing.T) {
	clock := ledgertest.NewClock(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	p, u, st := newTillProxy(t, clock, nil)
	ctx := context.Background()
	for i := range 3 {
		strandProxyUnknown(t, st, "note", fmt.Sprintf("n%d", i)) // no probe, due first
		clock.Advance(time.Millisecond)
	}
	found := strandProxyUnknown(t, st, "pay", "k-found")
	u.mu.Lock()
	u.paid["k-found"] = true
	u.mu.Unlock()
	absent := strandProxyUnknown(t, st, "pay", "k-absent")

	if n := p.ReconcileDue(ctx); n != 1 {
		t.Fatalf("first pass settled %d; want 1 (the found payment)", n)
	}
	if got := stateOf(t, st, found); got != ledger.StateSucceeded {
		t.Errorf("k-found = %s; want SUCCEEDED", got)
	}
	if got := stateOf(t, st, absent); got != ledger.StateUnknown {
		t.Errorf("k-absent within the quiet period = %s; want UNKNOWN", got)
	}
	// Not due yet: the next pass asks nothing.
	if n := p.ReconcileDue(ctx); n != 0 || u.finds.Load() != 2 {
		t.Fatalf("pass before the record is due settled %d, find ran %d times; want 0 and 2", n, u.finds.Load())
	}
	clock.Advance(2 * time.Minute)
	if n := p.ReconcileDue(ctx); n != 1 {
		t.Fatalf("pass after the quiet period settled %d; want 1", n)
	}
	if got := stateOf(t, st, absent); got != ledger.StateRetryable {
		t.Errorf("k-absent after the quiet period = %s; want RETRYABLE", got)
	}
	if u.pays.Load() != 0 || u.finds.Load() != 3 {
		t.Errorf("pay ran %d times, find %d; want 0 and 3", u.pays.Load(), u.finds.Load())
	}
	for i := range 3 {
		if got := stateOf(t, st, ledger.ID{Tenant: "default", Layer: ledger.LayerProxy, Tool: "note", Key: fmt.Sprintf("n%d", i)}); got != ledger.StateUnknown {
			t.Errorf("note n%d = %s; want UNKNOWN (no probe: for a person)", i, got)
		}
	}
}

// The proxy's reconciler runs a pass each time its wait says so, and
// returns when the proxy closes.
func TestProxySweepReconcilerStopsOnClose(t *testing.T) {
	clock := ledgertest.NewClock(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	waiting, tick := make(chan struct{}), make(chan struct{})
	stopped := make(chan struct{})
	p, u, st := newTillProxy(t, clock, func(o *proxy.Options) {
		o.ReconcileWait = func(ctx context.Context) bool {
			select {
			case waiting <- struct{}{}:
			case <-ctx.Done():
				close(stopped)
				return false
			}
			select {
			case <-tick:
				return true
			case <-ctx.Done():
				close(stopped)
				return false
			}
		}
	})
	id := strandProxyUnknown(t, st, "pay", "k-bg")
	u.mu.Lock()
	u.paid["k-bg"] = true
	u.mu.Unlock()
	<-waiting
	tick <- struct{}{}
	<-waiting // the pass is over
	if got := stateOf(t, st, id); got != ledger.StateSucceeded {
		t.Fatalf("k-bg after one pass = %s; want SUCCEEDED", got)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Close returned before the reconciler saw the proxy close")
	}
}

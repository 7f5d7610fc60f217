package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/wire"
)

// sends counts the tools/call requests that leave a go-sdk client below
// the ledger middleware, with the key each carried.
type sends struct {
	mu   sync.Mutex // guards keys
	keys []string
	n    atomic.Int64
}

func (s *sends) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			s.n.Add(1)
			p := req.GetParams().(*mcp.CallToolParams)
			key, _ := p.Meta[wire.MetaKey].(string)
			s.mu.Lock()
			s.keys = append(s.keys, key)
			s.mu.Unlock()
		}
		return next(ctx, method, req)
	}
}

func (s *sends) sentKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

type mwFixture struct {
	srv     *mcptest.Server
	store   ledger.Store
	mw      *client.Middleware
	session *mcp.ClientSession
	sent    *sends
}

// newMiddlewareFixture is a go-sdk client with the ledger middleware (and,
// below it, a counter of what is really sent) on an in-memory mcptest
// server: the runtime's own session, as a runtime would hold it.
func newMiddlewareFixture(t *testing.T, srvOpts *mcptest.Options, opts *client.Options) *mwFixture {
	t.Helper()
	f := &mwFixture{srv: mcptest.New(srvOpts), store: openStore(t), sent: &sends{}}
	t.Cleanup(func() { f.srv.Close() })
	if opts == nil {
		opts = &client.Options{}
	}
	if opts.Retry == nil {
		opts.Retry = fastRetry()
	}
	if opts.Policy == nil {
		opts.Policy = allow()
	}
	f.mw = client.NewMiddleware(f.store, opts)
	t.Cleanup(func() { f.mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(f.mw.Wrap, f.sent.middleware)
	s, err := mc.Connect(context.Background(), f.srv.ClientTransport(t), nil)
	if err != nil {
		t.Fatalf("Connect = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	f.session = s
	return f
}

func TestMiddlewareReplaysThroughTheSession(t *testing.T) {
	f := newMiddlewareFixture(t, nil, nil)
	ctx := client.WithChain(context.Background(), "order-7")
	var first *mcp.CallToolResult
	for i := range 3 {
		res, err := f.session.CallTool(ctx, write("a", 10))
		if err != nil {
			t.Fatalf("CallTool #%d = %v", i+1, err)
		}
		_, replayed := res.Meta[client.MetaReplay]
		if replayed != (i > 0) {
			t.Fatalf("CallTool #%d replay marker = %v; want %v", i+1, replayed, i > 0)
		}
		if i == 0 {
			first = res
			continue
		}
		if got, want := goText(res), goText(first); got != want {
			t.Fatalf("CallTool #%d text = %q; want the first's %q", i+1, got, want)
		}
	}
	if n := f.srv.TotalExecutions(); n != 1 {
		t.Fatalf("TotalExecutions = %d; want 1", n)
	}
	if n := f.sent.n.Load(); n != 1 {
		t.Fatalf("tools/call requests sent = %d; want 1", n)
	}
	// Everything else passes untouched.
	tools, err := f.session.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("ListTools = %v, %v; want the server's tools", tools, err)
	}
}

func TestMiddlewareRetriesThroughTheChainWithOneKey(t *testing.T) {
	f := newMiddlewareFixture(t, nil, nil)
	f.srv.Script(mcptest.FailTransient(2))
	ctx := client.WithKey(context.Background(), "retry-1")
	if _, err := f.session.CallTool(ctx, write("a", 1)); err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	keys := f.sent.sentKeys()
	if len(keys) != 3 {
		t.Fatalf("requests sent = %d (%v); want 3: two refused, one run", len(keys), keys)
	}
	for _, k := range keys {
		if k != "retry-1" {
			t.Fatalf("keys sent = %v; want retry-1 on every attempt", keys)
		}
	}
	if n := f.srv.Executions("retry-1"); n != 1 {
		t.Fatalf("Executions(retry-1) = %d; want 1", n)
	}
	if rec := record(t, f.store, "write", "retry-1"); rec.State != ledger.StateSucceeded || rec.Attempts != 3 {
		t.Fatalf("record = %s after %d attempts; want SUCCEEDED after 3", rec.State, rec.Attempts)
	}
}

// rpcErrorOf is err as the *jsonrpc.Error go-sdk returns for a server's
// error answer, with its data.
func rpcErrorOf(t *testing.T, err error) (*jsonrpc.Error, wire.ErrorData) {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("CallTool error = %v (%T); want a *jsonrpc.Error", err, err)
	}
	var d wire.ErrorData
	if len(je.Data) > 0 {
		if err := json.Unmarshal(je.Data, &d); err != nil {
			t.Fatalf("error data %s: %v", je.Data, err)
		}
	}
	return je, d
}

func TestMiddlewareAnswersAsAKeyAwareServer(t *testing.T) {
	deny := &confirm.Policy{Rules: []confirm.Rule{{Tool: "write", Action: confirm.Deny}}}
	queue := &confirm.Policy{Rules: []confirm.Rule{{Tool: "write", Action: confirm.Ask}}, WhenNoOneCanBeAsked: confirm.Queue}
	for _, tc := range []struct {
		name   string
		policy *confirm.Policy
		// first, when set, is made before the call under test.
		first  *mcp.CallToolParams
		fault  *mcptest.Fault
		ctxKey string
		call   *mcp.CallToolParams
		code   int64 // 0: an isError result
		state  ledger.State
		runs   int
		text   string // in the message or the result's text
	}{
		{name: "key reused", first: write("a", 1), ctxKey: "k1", call: write("a", 2),
			code: ledger.CodeKeyReused, runs: 1, text: "already used"},
		{name: "lost answer", fault: ptr(mcptest.DropAfterExecute()), ctxKey: "k1", call: write("a", 1),
			code: ledger.CodeOutcomeUnknown, state: ledger.StateUnknown, runs: 1, text: "outcome is unknown"},
		{name: "key breaks the rules", ctxKey: "no spaces", call: write("a", 1),
			code: ledger.CodeKeyRequired, runs: 0, text: "key"},
		{name: "_meta key of another value than the context's", ctxKey: "k1",
			call: &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": "a", "amount": 1}, Meta: mcp.Meta{wire.MetaKey: "k2"}},
			code: ledger.CodeKeyRequired, runs: 0, text: "k2"},
		{name: "queued", policy: queue, ctxKey: "k1", call: write("a", 1),
			code: ledger.CodeInProgress, state: ledger.StatePendingApproval, runs: 0, text: "awaits a person's approval"},
		{name: "denied", policy: deny, ctxKey: "k1", call: write("a", 1),
			state: ledger.StateDenied, runs: 0, text: "denied"},
		{name: "unknown tool", ctxKey: "k1", call: &mcp.CallToolParams{Name: "refund", Arguments: map[string]any{}},
			code: jsonrpc.CodeInvalidParams, runs: 0, text: "refund"},
		{name: "arguments not an object", ctxKey: "k1", call: &mcp.CallToolParams{Name: "write", Arguments: []int{1}},
			code: jsonrpc.CodeInvalidParams, runs: 0, text: "object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newMiddlewareFixture(t, nil, &client.Options{Policy: tc.policy})
			ctx := client.WithKey(context.Background(), tc.ctxKey)
			if tc.first != nil {
				if _, err := f.session.CallTool(ctx, tc.first); err != nil {
					t.Fatalf("first CallTool = %v", err)
				}
			}
			if tc.fault != nil {
				f.srv.Script(*tc.fault)
			}
			res, err := f.session.CallTool(ctx, tc.call)
			if tc.code == 0 {
				if err != nil || !res.IsError {
					t.Fatalf("CallTool = %v, %v; want an isError result", res, err)
				}
				m, _ := res.Meta[wire.MetaError].(map[string]any)
				if m["state"] != string(tc.state) || m["key"] != tc.ctxKey || !strings.Contains(goText(res), tc.text) {
					t.Fatalf("result %q, _meta error %v; want state %s, key %s, text with %q", goText(res), m, tc.state, tc.ctxKey, tc.text)
				}
			} else {
				je, d := rpcErrorOf(t, err)
				if je.Code != tc.code || d.State != string(tc.state) || !strings.Contains(je.Message, tc.text) {
					t.Fatalf("CallTool error = %d %q, data %+v; want %d, state %q, message with %q", je.Code, je.Message, d, tc.code, tc.state, tc.text)
				}
				if tc.state != "" && d.Key != tc.ctxKey {
					t.Fatalf("data.key = %q; want %q", d.Key, tc.ctxKey)
				}
			}
			if n := f.srv.TotalExecutions(); n != tc.runs {
				t.Fatalf("TotalExecutions = %d; want %d", n, tc.runs)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The wrapper's error and the middleware's answer carry the same text.
func TestMiddlewareKeyReuseIsTheWrappersError(t *testing.T) {
	f := newMiddlewareFixture(t, nil, nil)
	w := newFixture(t, nil, nil)
	ctx := client.WithKey(context.Background(), "order-9")
	if _, err := f.session.CallTool(ctx, write("a", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.CallTool(ctx, write("a", 1)); err != nil {
		t.Fatal(err)
	}
	_, err := f.session.CallTool(ctx, write("a", 2))
	je, _ := rpcErrorOf(t, err)
	_, werr := w.c.CallTool(ctx, write("a", 2))
	ce, ok := errs.AsType[*client.Error](werr)
	if !ok || !errors.Is(werr, ledger.ErrKeyReused) {
		t.Fatalf("wrapper error = %v; want a *client.Error with ledger.ErrKeyReused", werr)
	}
	if want := client.WireError(werr); je.Code != want.Code || je.Message != ce.Text || je.Message != want.Message {
		t.Fatalf("middleware answer = %d %q; want the wrapper's %d %q", je.Code, je.Message, want.Code, ce.Text)
	}
}

func TestMiddlewareHonoursTheKeyInMeta(t *testing.T) {
	f := newMiddlewareFixture(t, nil, nil)
	p := &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": "a", "amount": 1}, Meta: mcp.Meta{wire.MetaKey: "host-key-1"}}
	for range 2 {
		if _, err := f.session.CallTool(context.Background(), p); err != nil {
			t.Fatalf("CallTool = %v", err)
		}
	}
	if rec := record(t, f.store, "write", "host-key-1"); rec.State != ledger.StateSucceeded {
		t.Fatalf("record of host-key-1 = %s; want SUCCEEDED", rec.State)
	}
	if n := f.srv.Executions("host-key-1"); n != 1 {
		t.Fatalf("Executions(host-key-1) = %d; want 1", n)
	}
}

// A wrapper made on a session whose client has the middleware records
// each call once: the middleware lets the wrapper's own request pass.
func TestWrapperOverMiddlewareRecordsOnce(t *testing.T) {
	f := newMiddlewareFixture(t, nil, nil)
	c := client.New(f.session, f.store, &client.Options{Policy: allow(), Retry: fastRetry()})
	ctx := client.WithKey(context.Background(), "both-1")
	if _, err := c.CallTool(ctx, write("a", 1)); err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	page, err := f.store.List(context.Background(), ledger.Filter{Tenant: "default", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 1 || f.srv.Executions("both-1") != 1 {
		t.Fatalf("records = %d, executions = %d; want 1 and 1", len(page.Records), f.srv.Executions("both-1"))
	}
}

func TestMiddlewareClosedSendsNothing(t *testing.T) {
	f := newMiddlewareFixture(t, nil, nil)
	if err := f.mw.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	_, err := f.session.CallTool(context.Background(), write("a", 1))
	if !errors.Is(err, client.ErrMiddlewareClosed) {
		t.Fatalf("CallTool after Close = %v; want ErrMiddlewareClosed", err)
	}
	if n := f.sent.n.Load(); n != 0 {
		t.Fatalf("tools/call requests sent = %d; want 0", n)
	}
}

// Two sessions of one client share the middleware's ledger session: a
// runtime that reconnects keeps its re-planning window.
func TestMiddlewareSessionsShareTheLedgerSession(t *testing.T) {
	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	st := openStore(t)
	mw := client.NewMiddleware(st, &client.Options{Policy: allow(), Retry: fastRetry()})
	t.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap)
	ctx := context.Background()
	first, err := mc.Connect(ctx, srv.ClientTransport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.CallTool(ctx, write("a", 5)); err != nil {
		t.Fatalf("CallTool on the first session = %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := mc.Connect(ctx, srv.ClientTransport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Close() })
	res, err := second.CallTool(ctx, write("a", 5))
	if err != nil {
		t.Fatalf("CallTool on the second session = %v", err)
	}
	if _, replayed := res.Meta[client.MetaReplay]; !replayed || srv.TotalExecutions() != 1 {
		t.Fatalf("re-planned call on a new session: replayed %v, executions %d; want a replay, 1", replayed, srv.TotalExecutions())
	}
}

func TestConnectLedgerAnswersTheModel(t *testing.T) {
	f := newMiddlewareFixture(t, nil, nil)
	ctx := context.Background()
	if _, err := f.session.CallTool(client.WithKey(ctx, "pay-1"), write("a", 3)); err != nil {
		t.Fatal(err)
	}
	ls, err := f.mw.ConnectLedger(ctx)
	if err != nil {
		t.Fatalf("ConnectLedger = %v", err)
	}
	t.Cleanup(func() { ls.Close() })
	res, err := ls.CallTool(ctx, &mcp.CallToolParams{Name: "ledger_status", Arguments: map[string]any{"key": "pay-1"}})
	if err != nil || res.IsError {
		t.Fatalf("ledger_status = %v, %v", res, err)
	}
	if text := goText(res); !strings.Contains(text, "pay-1") || !strings.Contains(text, "succeeded") {
		t.Fatalf("ledger_status says %q; want the key and that it succeeded", text)
	}
	byArgs, err := ls.CallTool(ctx, &mcp.CallToolParams{Name: "ledger_status", Arguments: map[string]any{
		"tool": "write", "arguments": map[string]any{"id": "a", "amount": 3}}})
	if err != nil || !strings.Contains(goText(byArgs), "pay-1") {
		t.Fatalf("ledger_status by arguments = %v, %v; want the call of pay-1", byArgs, err)
	}
	// Asking the ledger is not an operation: still one record.
	page, err := f.store.List(ctx, ledger.Filter{Tenant: "default", Limit: 10})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("records = %v, %v; want the one call", page, err)
	}
}

func TestShowReplaysTellsTheModel(t *testing.T) {
	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	mw := client.NewMiddleware(openStore(t), &client.Options{Policy: allow(), Retry: fastRetry()})
	t.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(client.ShowReplays, mw.Wrap)
	ctx := context.Background()
	s, err := mc.Connect(ctx, srv.ClientTransport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx = client.WithKey(ctx, "shown-1")
	first, err := s.CallTool(ctx, write("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.CallTool(ctx, write("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Content) != len(first.Content)+1 {
		t.Fatalf("replay has %d content blocks; want the first's %d and a note", len(second.Content), len(first.Content))
	}
	note := second.Content[len(second.Content)-1].(*mcp.TextContent).Text
	if !strings.Contains(note, "already ran") || !strings.Contains(note, "shown-1") || !strings.Contains(note, "write") {
		t.Fatalf("replay note = %q; want that write already ran, with its key", note)
	}
	if strings.Contains(goText(first), "already ran") {
		t.Fatalf("first execution carries a replay note: %q", goText(first))
	}
}

// goText is the text content of res, joined.
func goText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, " ")
}

// A runtime that gives up after the request reached the tool is told the
// outcome is unknown (-31003), as the truth rule says, not that it
// cancelled; one that gives up before anything was sent gets its
// context's error, as from a bare session.
func TestMiddlewareCancelledCall(t *testing.T) {
	t.Run("after the tool ran", func(t *testing.T) {
		f := newMiddlewareFixture(t, nil, nil)
		f.srv.Script(mcptest.StallAfterExecute(0))
		ctx, cancel := context.WithCancel(client.WithKey(context.Background(), "gave-up-1"))
		defer cancel()
		go func() {
			<-f.srv.Stalled() // the tool ran; its answer is held back
			cancel()
		}()
		_, err := f.session.CallTool(ctx, write("a", 1))
		je, d := rpcErrorOf(t, err)
		if je.Code != ledger.CodeOutcomeUnknown || d.State != string(ledger.StateUnknown) || d.Key != "gave-up-1" {
			t.Fatalf("CallTool = %d %q, data %+v; want -31003 UNKNOWN for gave-up-1", je.Code, je.Message, d)
		}
		if rec := settled(t, f.store, "write", "gave-up-1"); rec.State != ledger.StateUnknown {
			t.Fatalf("record = %s; want UNKNOWN", rec.State)
		}
	})
	t.Run("before anything was sent", func(t *testing.T) {
		f := newMiddlewareFixture(t, nil, nil)
		ctx, cancel := context.WithCancel(client.WithKey(context.Background(), "gave-up-2"))
		cancel()
		_, err := f.session.CallTool(ctx, write("a", 1))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool = %v; want the context's error", err)
		}
		if n := f.srv.TotalExecutions(); n != 0 {
			t.Fatalf("TotalExecutions = %d; want 0", n)
		}
	})
}

// ToolListChanged, wired as the client's handler, makes the middleware
// read the server's changed tool list: a tool the server redefines as
// read-only bypasses the ledger at once when the server is trusted.
func TestMiddlewareToolListChanged(t *testing.T) {
	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	st := openStore(t)
	mw := client.NewMiddleware(st, &client.Options{Policy: allow(), Retry: fastRetry(), TrustedServer: true})
	t.Cleanup(func() { mw.Close() })
	changed := make(chan struct{}, 4)
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			mw.ToolListChanged(ctx, req)
			changed <- struct{}{}
		},
	})
	mc.AddSendingMiddleware(mw.Wrap)
	ctx := context.Background()
	peek := func(readOnly bool) {
		srv.MCP().AddTool(&mcp.Tool{Name: "peek", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "peeked"}}}, nil
			})
	}
	peek(false)
	s, err := mc.Connect(ctx, srv.ClientTransport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	recorded := func(key string) bool {
		if _, err := s.CallTool(client.WithKey(ctx, key), &mcp.CallToolParams{Name: "peek", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		_, err := st.Get(ctx, ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "peek", Key: key})
		return err == nil
	}
	if !recorded("p-1") {
		t.Fatal("peek, not read-only, was not recorded")
	}
	peek(true)
	<-changed
	if recorded("p-2") {
		t.Fatal("peek, redefined read-only by a trusted server, still went through the ledger")
	}
}

// Two tenants' middlewares on one ledger and one server, with the same
// key: each tenant's call is its own, on the server too, and neither
// tenant's ledger tools see the other's record.
func TestMiddlewareTenantsApart(t *testing.T) {
	srv := mcptest.New(&mcptest.Options{Idempotent: true})
	t.Cleanup(func() { srv.Close() })
	st := openStore(t)
	ctx := client.WithKey(context.Background(), "order-1")
	var ledgers []*mcp.ClientSession
	for _, tenant := range []string{"acme", "globex"} {
		mw := client.NewMiddleware(st, &client.Options{Tenant: tenant, Session: "run-1", Policy: allow(), Retry: fastRetry()})
		t.Cleanup(func() { mw.Close() })
		mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
		mc.AddSendingMiddleware(mw.Wrap)
		s, err := mc.Connect(context.Background(), srv.ClientTransport(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		res, err := s.CallTool(ctx, write("a", 1))
		if err != nil {
			t.Fatalf("%s: CallTool = %v", tenant, err)
		}
		if _, replayed := res.Meta[client.MetaReplay]; replayed {
			t.Fatalf("%s got a replay of another tenant's call", tenant)
		}
		if _, err := st.Get(context.Background(), ledger.ID{Tenant: tenant, Layer: ledger.LayerClient, Tool: "write", Key: "order-1"}); err != nil {
			t.Fatalf("%s's record: %v", tenant, err)
		}
		ls, err := mw.ConnectLedger(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ls.Close() })
		ledgers = append(ledgers, ls)
	}
	if n := srv.TotalExecutions(); n != 2 {
		t.Fatalf("TotalExecutions = %d; want 2, one per tenant", n)
	}
	for i, ls := range ledgers {
		res, err := ls.CallTool(context.Background(), &mcp.CallToolParams{Name: "ledger_list", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		calls, _ := res.StructuredContent.(map[string]any)["calls"].([]any)
		if len(calls) != 1 {
			t.Fatalf("tenant %d's ledger_list shows %d calls; want its own one", i, len(calls))
		}
	}
}

// The same Middleware added twice records each call once, and does not
// wait on itself.
func TestMiddlewareAddedTwiceRecordsOnce(t *testing.T) {
	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	st := openStore(t)
	mw := client.NewMiddleware(st, &client.Options{Policy: allow(), Retry: fastRetry()})
	t.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap, mw.Wrap)
	s, err := mc.Connect(context.Background(), srv.ClientTransport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for range 2 {
		if _, err := s.CallTool(client.WithKey(context.Background(), "twice-1"), write("a", 1)); err != nil {
			t.Fatalf("CallTool = %v", err)
		}
	}
	if n := srv.TotalExecutions(); n != 1 {
		t.Fatalf("TotalExecutions = %d; want 1", n)
	}
	if rec := record(t, st, "write", "twice-1"); rec.State != ledger.StateSucceeded || rec.Attempts != 1 {
		t.Fatalf("record = %s after %d attempts; want SUCCEEDED after 1", rec.State, rec.Attempts)
	}
}

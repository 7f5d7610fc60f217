package parity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	mgclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcpgo"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// The parity test: one table of scenarios, run through every adapter of
// the one caller (package client's wrapper on go-sdk, package mcpgo on
// mcp-go, the proxy in front of the same upstream, asked by a bare go-sdk
// host that sends its own key, and package client's middleware under a
// runtime's own go-sdk session), each on a ledger of its own. Every
// adapter must leave the same state in its ledger, answer with the same
// state, exit code and model text, and run the tool as often; the wire
// answers of the proxy and the middleware must be their state's row.

// payServer is an upstream that knows nothing of keys: pay counts its
// executions, and the next response can be made to go missing after the
// tool ran.
type payServer struct {
	runs atomic.Int64
	drop atomic.Bool
	url  string
}

type payArgs struct {
	Amount int `json:"amount"`
}

func newPayServer(t *testing.T) *payServer {
	t.Helper()
	ps := &payServer{}
	s := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "pay", Description: "moves money"}, func(ctx context.Context, req *mcp.CallToolRequest, in payArgs) (*mcp.CallToolResult, any, error) {
		n := ps.runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("paid %d (payment %d)", in.Amount, n)}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !ps.drop.Load() {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) || !ps.drop.CompareAndSwap(true, false) {
			h.ServeHTTP(w, r)
			return
		}
		// The tool runs to its end; its answer never leaves.
		h.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic("payServer: hijack: " + err.Error())
		}
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	ps.url = srv.URL + "/mcp"
	return ps
}

// answer is what one call came back with, in terms every adapter shares.
type answer struct {
	// Kind: "result", "replay", or "error".
	Kind string
	// State is the state the answer names (StateOf of the error, or the
	// record of a result); "" when it names none (a reused key).
	State ledger.State
	// Exit is the agentctl exit code of that state's row (0 for a result).
	Exit int
	// Text is the model's text: the result's text or the error's.
	Text string
	// Record is the state of the adapter's own record of the call.
	Record ledger.State
	// Runs is the upstream's execution count after the call.
	Runs int64
	// Protocol: answered as the upstream's own -32602, whose message is
	// the server's (the other adapters' text quotes it).
	Protocol bool
}

// adapter makes calls through one adapter under an explicit key.
type adapter struct {
	name  string
	layer string
	// mirrors: the adapter serves the upstream's tool list as its own, so
	// it refuses a tool the upstream does not list at its door (-32602),
	// before its ledger.
	mirrors bool
	start   func(t *testing.T, ps *payServer, st ledger.Store, policy *confirm.Policy, mp metric.MeterProvider) func(ctx context.Context, tool, key string, args map[string]any) (answer, error)
}

var parityRetry = &retry.Policy{MaxAttempts: 3, InitialInterval: 1, MaxInterval: 1}

// parityWait bounds how long an adapter waits on a call another owner
// holds, so a walk through PROCESSING ends quickly.
const parityWait = 150 * time.Millisecond

var adapters = []adapter{
	{name: "client", layer: ledger.LayerClient, start: startClient},
	{name: "mcpgo", layer: ledger.LayerClient, start: startMCPGo},
	{name: "proxy", layer: ledger.LayerProxy, mirrors: true, start: startProxy},
	{name: "middleware", layer: ledger.LayerClient, start: startMiddleware},
}

func startClient(t *testing.T, ps *payServer, st ledger.Store, policy *confirm.Policy, mp metric.MeterProvider) func(context.Context, string, string, map[string]any) (answer, error) {
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: ps.url, MaxRetries: -1}
		return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, tr, nil)
	}
	c, err := client.Dial(t.Context(), connect, st, &client.Options{Retry: parityRetry, Policy: policy, Session: "parity", InProgressWait: parityWait, MeterProvider: mp})
	if err != nil {
		t.Fatalf("client.Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return func(ctx context.Context, tool, key string, args map[string]any) (answer, error) {
		o, err := c.Call(client.WithKey(ctx, key), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return errorAnswer(err), nil
		}
		return answer{Kind: kindOf(o.Replayed), State: o.Record.State, Text: goText(o.Result)}, nil
	}
}

func startMCPGo(t *testing.T, ps *payServer, st ledger.Store, policy *confirm.Policy, mp metric.MeterProvider) func(context.Context, string, string, map[string]any) (answer, error) {
	connect := func(ctx context.Context) (*mgclient.Client, error) {
		h, err := transport.NewStreamableHTTP(ps.url)
		if err != nil {
			return nil, err
		}
		mc := mgclient.NewClient(mcpgo.Transport(h))
		if err := mc.Start(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
		init := mgmcp.InitializeRequest{}
		// The newest version go-sdk's streamable handler serves mcp-go.
		init.Params.ProtocolVersion = mgmcp.LATEST_LEGACY_PROTOCOL_VERSION
		init.Params.ClientInfo = mgmcp.Implementation{Name: "agent", Version: "v1"}
		if _, err := mc.Initialize(ctx, init); err != nil {
			return nil, errors.Join(err, mc.Close())
		}
		return mc, nil
	}
	c, err := mcpgo.Dial(t.Context(), connect, st, &mcpgo.ClientOptions{Retry: parityRetry, Policy: policy, Session: "parity", InProgressWait: parityWait, MeterProvider: mp})
	if err != nil {
		t.Fatalf("mcpgo.Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return func(ctx context.Context, tool, key string, args map[string]any) (answer, error) {
		req := mgmcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = args
		o, err := c.Call(caller.WithKey(ctx, key), req)
		if err != nil {
			return errorAnswer(err), nil
		}
		var text []string
		for _, ct := range o.Result.Content {
			if tc, ok := mgmcp.AsTextContent(ct); ok {
				text = append(text, tc.Text)
			}
		}
		return answer{Kind: kindOf(o.Replayed), State: o.Record.State, Text: strings.Join(text, " ")}, nil
	}
}

// startProxy puts the proxy in front of the upstream and answers from what
// a host that sends its own key sees on the wire: a result, or the
// JSON-RPC error of the call's state.
func startProxy(t *testing.T, ps *payServer, st ledger.Store, policy *confirm.Policy, mp metric.MeterProvider) func(context.Context, string, string, map[string]any) (answer, error) {
	p, err := proxy.New(t.Context(), &proxy.Options{
		Transport: func(context.Context) (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: ps.url, MaxRetries: -1}, nil
		},
		Store: st, Policy: policy, Session: "parity",
		Client: &client.Options{Retry: parityRetry, InProgressWait: parityWait, MeterProvider: mp},
	})
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	sst, cst := mcp.NewInMemoryTransports()
	if _, err := p.Server().Connect(t.Context(), sst, nil); err != nil {
		t.Fatalf("proxy Connect: %v", err)
	}
	host, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, nil).Connect(t.Context(), cst, nil)
	if err != nil {
		t.Fatalf("host Connect: %v", err)
	}
	t.Cleanup(func() { host.Close() })
	return func(ctx context.Context, tool, key string, args map[string]any) (answer, error) {
		return wireAnswer(host.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{wire.MetaKey: key}}))
	}
}

// startMiddleware adds the client middleware to a go-sdk client and
// answers from what the runtime's own session.CallTool returns, which must
// read as a key-aware server's answer: a result, or the JSON-RPC error of
// the call's state.
func startMiddleware(t *testing.T, ps *payServer, st ledger.Store, policy *confirm.Policy, mp metric.MeterProvider) func(context.Context, string, string, map[string]any) (answer, error) {
	mw := client.NewMiddleware(st, &client.Options{Retry: parityRetry, Policy: policy, Session: "parity", InProgressWait: parityWait, MeterProvider: mp})
	t.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap)
	session, err := mc.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ps.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return func(ctx context.Context, tool, key string, args map[string]any) (answer, error) {
		return wireAnswer(session.CallTool(client.WithKey(ctx, key), &mcp.CallToolParams{Name: tool, Arguments: args}))
	}
}

// wireAnswer reads what a bare go-sdk session got, from the proxy or
// through the middleware: a result, or the JSON-RPC error of the call's
// state, which must be the code its row names.
func wireAnswer(res *mcp.CallToolResult, err error) (answer, error) {
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			return answer{}, fmt.Errorf("the answer is no JSON-RPC error: %w", err)
		}
		var d wire.ErrorData
		if len(je.Data) > 0 {
			if err := json.Unmarshal(je.Data, &d); err != nil {
				return answer{}, fmt.Errorf("error data %s: %w", je.Data, err)
			}
		}
		a := answer{Kind: "error", State: ledger.State(d.State), Text: je.Message}
		switch {
		case je.Code == ledger.CodeKeyReused:
			a.State = ""
		case a.State == "" && je.Code == jsonrpc.CodeInvalidParams:
			a.State, a.Protocol = ledger.StateRejected, true
		}
		if a.State != "" {
			a.Exit = ledger.RowOf(a.State).Exit
			if row := ledger.RowOf(a.State); row.Code != 0 && row.Code != je.Code {
				return answer{}, fmt.Errorf("%s was answered with code %d; its row says %d", a.State, je.Code, row.Code)
			}
		}
		return a, nil
	}
	text := goText(res)
	if res.IsError {
		if m, ok := res.Meta[wire.MetaError].(map[string]any); ok {
			st, _ := m["state"].(string)
			if row := ledger.RowOf(ledger.State(st)); row.Code != 0 {
				return answer{}, fmt.Errorf("%s was answered with an isError result; its row says code %d", st, row.Code)
			}
			return answer{Kind: "error", State: ledger.State(st), Exit: ledger.RowOf(ledger.State(st)).Exit, Text: text}, nil
		}
	}
	_, replayed := res.Meta[wire.MetaReplay]
	a := answer{Kind: kindOf(replayed), State: ledger.StateSucceeded, Text: text}
	if res.IsError {
		a.State = ledger.StateFailed // the tool's own answer
	}
	return a, nil
}

func kindOf(replayed bool) string {
	if replayed {
		return "replay"
	}
	return "result"
}

func goText(res *mcp.CallToolResult) string {
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, " ")
}

// errorAnswer is a client adapter's error in the shared terms.
func errorAnswer(err error) answer {
	a := answer{Kind: "error", Text: err.Error()}
	if st, ok := caller.StateOf(err); ok {
		a.State, a.Exit = st, ledger.RowOf(st).Exit
	}
	if ce, ok := errs.AsType[*caller.Error](err); ok && ce.Text != "" {
		a.Text = ce.Text
	}
	return a
}

// step is one call of a scenario.
type step struct {
	tool string // "pay" when empty
	// unlisted: the upstream does not list the tool.
	unlisted bool
	args     map[string]any
	drop     bool // lose this call's response after the tool ran
	want     answer
}

func TestParity(t *testing.T) {
	allow := &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}
	deny := &confirm.Policy{Rules: []confirm.Rule{{Tool: "pay", Action: confirm.Deny}}}
	ask := &confirm.Policy{Rules: []confirm.Rule{{Tool: "pay", Action: confirm.Ask}}}
	queue := &confirm.Policy{Rules: []confirm.Rule{{Tool: "pay", Action: confirm.Ask}}, WhenNoOneCanBeAsked: confirm.Queue}
	five, six, bad := map[string]any{"amount": 5}, map[string]any{"amount": 6}, map[string]any{"amount": "five"}
	for _, sc := range []struct {
		name   string
		policy *confirm.Policy
		steps  []step
	}{
		{"replay", allow, []step{
			{args: five, want: answer{Kind: "result", State: ledger.StateSucceeded, Record: ledger.StateSucceeded, Runs: 1}},
			{args: five, want: answer{Kind: "replay", State: ledger.StateSucceeded, Record: ledger.StateSucceeded, Runs: 1}},
		}},
		{"key reuse", allow, []step{
			{args: five, want: answer{Kind: "result", State: ledger.StateSucceeded, Record: ledger.StateSucceeded, Runs: 1}},
			{args: six, want: answer{Kind: "error", Record: ledger.StateSucceeded, Runs: 1}},
		}},
		// go-sdk's server answers arguments its schema refuses with an
		// isError result: the tool's own answer, final.
		{"arguments refused", allow, []step{
			{args: bad, want: answer{Kind: "result", State: ledger.StateFailed, Record: ledger.StateFailed}},
			{args: bad, want: answer{Kind: "replay", State: ledger.StateFailed, Record: ledger.StateFailed}},
		}},
		// A tool the server does not have: -32602 before anything ran.
		{"invalid params", allow, []step{
			{tool: "refund", unlisted: true, args: five, want: answer{Kind: "error", State: ledger.StateRejected, Exit: ledger.RowOf(ledger.StateRejected).Exit, Record: ledger.StateRejected}},
			{tool: "refund", unlisted: true, args: five, want: answer{Kind: "error", State: ledger.StateRejected, Exit: ledger.RowOf(ledger.StateRejected).Exit, Record: ledger.StateRejected}},
		}},
		{"deny", deny, []step{
			{args: five, want: answer{Kind: "error", State: ledger.StateDenied, Exit: ledger.RowOf(ledger.StateDenied).Exit, Record: ledger.StateDenied}},
			{args: five, want: answer{Kind: "error", State: ledger.StateDenied, Exit: ledger.RowOf(ledger.StateDenied).Exit, Record: ledger.StateDenied}},
		}},
		{"no one to ask", ask, []step{
			{args: five, want: answer{Kind: "error", State: ledger.StateRejected, Exit: ledger.RowOf(ledger.StateRejected).Exit, Record: ledger.StateRejected}},
		}},
		{"queue", queue, []step{
			{args: five, want: answer{Kind: "error", State: ledger.StatePendingApproval, Exit: ledger.RowOf(ledger.StatePendingApproval).Exit, Record: ledger.StatePendingApproval}},
			{args: five, want: answer{Kind: "error", State: ledger.StatePendingApproval, Exit: ledger.RowOf(ledger.StatePendingApproval).Exit, Record: ledger.StatePendingApproval}},
		}},
		{"lost response", allow, []step{
			{args: five, drop: true, want: answer{Kind: "error", State: ledger.StateUnknown, Exit: ledger.RowOf(ledger.StateUnknown).Exit, Record: ledger.StateUnknown, Runs: 1}},
			{args: five, want: answer{Kind: "error", State: ledger.StateUnknown, Exit: ledger.RowOf(ledger.StateUnknown).Exit, Record: ledger.StateUnknown, Runs: 1}},
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			got := map[string][]answer{}
			for _, ad := range adapters {
				ps := newPayServer(t)
				st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), ad.name+".db"), nil)
				if err != nil {
					t.Fatalf("sqlite.Open: %v", err)
				}
				t.Cleanup(func() { st.Close() })
				call := ad.start(t, ps, st, sc.policy, nil)
				const key = "parity-1"
				for i, s := range sc.steps {
					ps.drop.Store(s.drop)
					tool := s.tool
					if tool == "" {
						tool = "pay"
					}
					a, err := call(t.Context(), tool, key, s.args)
					if err != nil {
						t.Fatalf("%s step %d: %v", ad.name, i, err)
					}
					a.Runs = ps.runs.Load()
					rec, err := st.Get(t.Context(), ledger.ID{Tenant: "default", Layer: ad.layer, Tool: tool, Key: key})
					switch {
					case s.unlisted && ad.mirrors && errors.Is(err, ledger.ErrNotFound):
						a.Record = s.want.Record // refused at the door, as a REJECTED record would be
					case err != nil:
						t.Fatalf("%s step %d: the record of %s: %v", ad.name, i, key, err)
					default:
						a.Record = rec.State
					}
					want := s.want
					if a.Kind != want.Kind || a.State != want.State || a.Exit != want.Exit || a.Record != want.Record || a.Runs != want.Runs {
						t.Errorf("%s step %d = %s %q exit %d, record %s, %d runs; want %s %q exit %d, record %s, %d runs (text: %s)",
							ad.name, i, a.Kind, a.State, a.Exit, a.Record, a.Runs, want.Kind, want.State, want.Exit, want.Record, want.Runs, a.Text)
					}
					got[ad.name] = append(got[ad.name], a)
				}
			}
			// The model reads the same text from every adapter.
			ref := got[adapters[0].name]
			for _, ad := range adapters[1:] {
				for i, a := range got[ad.name] {
					if i >= len(ref) {
						break
					}
					if a.Protocol {
						if !strings.Contains(ref[i].Text, a.Text) {
							t.Errorf("step %d: %s answers -32602 %q; %s's text does not quote it: %q", i, ad.name, a.Text, adapters[0].name, ref[i].Text)
						}
						continue
					}
					if normal(a.Text) != normal(ref[i].Text) {
						t.Errorf("step %d: %s says %q; %s says %q", i, ad.name, a.Text, adapters[0].name, ref[i].Text)
					}
				}
			}
		})
	}
}

// stamp matches the times and durations a text may carry.
var stamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|\d+(\.\d+)?(ms|µs|s)\b`)

// remedy matches the operator's remedy for a call no one could confirm,
// which names the deployment's own switch (a policy file, --yes, the
// proxy's --policy): the rest of the text is the same everywhere.
var remedy = regexp.MustCompile(`no one confirmed it: .*?\); nothing took effect`)

func normal(s string) string {
	return remedy.ReplaceAllString(stamp.ReplaceAllString(s, "T"), "no one confirmed it: …); nothing took effect")
}

package mcpgo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	lclient "github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcpgo"
	"github.com/mcpledger/mcpledger/mcpgo/internal/orders"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// ordersdBuild is the child-process server binary, built on first use:
// the benchmarks and the tests over HTTP never start it, and a run of
// them alone does not wait for its build.
var ordersdBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

// ordersd returns the path of the child-process server binary, building it
// the first time.
func ordersd(t testing.TB) string {
	t.Helper()
	b := &ordersdBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "mcpgo-test-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "ordersd")
		out, err := exec.Command("go", "build", "-o", b.path, "./internal/ordersd").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("build ordersd: %v", b.err)
	}
	return b.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ordersdBuild.dir != "" {
		os.RemoveAll(ordersdBuild.dir)
	}
	os.Exit(code)
}

func openStore(t testing.TB, name string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), name), nil)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// upstream is a create_order server: the go-sdk one with package server's
// guard, or the mcp-go one with package mcpgo's, or either unguarded; over
// streamable HTTP on 127.0.0.1 or as stdio child processes.
type upstream struct {
	sdk     string // "gosdk" or "mcpgo"
	guarded bool
	// runs counts executions of create_order.
	runs func() int64
	// drop makes the next create_order response go missing after the
	// handler ran.
	drop func()
	// url is the streamable HTTP endpoint; empty for stdio.
	url string
	// args start a stdio child process of the server.
	args []string
}

func newUpstream(t *testing.T, sdk, wireName string, guarded bool) *upstream {
	t.Helper()
	u := &upstream{sdk: sdk, guarded: guarded}
	dir := t.TempDir()
	if wireName == "stdio" {
		runs, drop := filepath.Join(dir, "runs"), filepath.Join(dir, "drop")
		u.args = []string{"-sdk", sdk, "-runs", runs, "-drop", drop}
		if guarded {
			u.args = append(u.args, "-ledger", filepath.Join(dir, "server.db"))
		}
		u.runs = func() int64 {
			n, err := orders.FileRuns(runs)
			if err != nil {
				t.Fatalf("count runs: %v", err)
			}
			return n
		}
		u.drop = func() {
			if err := os.WriteFile(drop, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return u
	}
	var store ledger.Store
	if guarded {
		store = openStore(t, "server.db")
	}
	c := &orders.Counter{}
	u.runs = c.Runs
	var h http.Handler
	switch sdk {
	case "gosdk":
		s := orders.GoSDK(store, c)
		h = gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return s }, nil)
	case "mcpgo":
		s, g := orders.MCPGo(store, c)
		h = mgserver.NewStreamableHTTPServer(s)
		if g != nil {
			h = g.Handler(h)
		}
	}
	d := &dropper{next: h}
	u.drop = func() { d.armed.Store(true) }
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

// dropper loses the response of one create_order call, once armed: the
// handler runs to the end, then the connection is closed without an
// answer.
type dropper struct {
	next  http.Handler
	armed atomic.Bool
}

func (d *dropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !d.armed.Load() {
		d.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"tools/call"`)) || !d.armed.CompareAndSwap(true, false) {
		d.next.ServeHTTP(w, r)
		return
	}
	d.next.ServeHTTP(httptest.NewRecorder(), r)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic("dropper: hijack: " + err.Error())
	}
	conn.Close()
}

// agent is a caller of create_order through one SDK's ledger wrapper.
type agent interface {
	call(ctx context.Context, args map[string]any) (answer, error)
	close() error
}

// answer is what a call returned.
type answer struct {
	text string
	// marker is the replay marker on the result, if any.
	marker   bool
	attempts int
}

// fastRetry keeps retries quick: the tests wait on nothing but the calls.
var fastRetry = &retry.Policy{MaxAttempts: 4, InitialInterval: 1, MaxInterval: 1}

var allowAll = &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}

// mcpgoAgent is an mcp-go client through package mcpgo.
type mcpgoAgent struct{ c *mcpgo.Client }

func newMCPGoAgent(t *testing.T, u *upstream, store ledger.Store, tenant string) *mcpgoAgent {
	t.Helper()
	var bin string
	if u.url == "" {
		bin = ordersd(t)
	}
	connect := func(ctx context.Context) (*client.Client, error) {
		var tr transport.Interface
		if u.url != "" {
			h, err := transport.NewStreamableHTTP(u.url)
			if err != nil {
				return nil, err
			}
			tr = h
		} else {
			tr = transport.NewStdio(bin, nil, u.args...)
		}
		mc := client.NewClient(mcpgo.Transport(tr))
		// The child lives as long as the client, not the call that
		// started it.
		if err := mc.Start(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		if u.url != "" && u.sdk == "gosdk" {
			// go-sdk's stateful streamable handler answers mcp-go's
			// server/discover probe and then refuses 2026-07-28 requests:
			// pin the newest version it serves.
			init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		}
		init.Params.ClientInfo = mcp.Implementation{Name: "mcpgo-agent", Version: "v1"}
		if _, err := mc.Initialize(ctx, init); err != nil {
			return nil, errors.Join(err, mc.Close())
		}
		return mc, nil
	}
	c, err := mcpgo.Dial(t.Context(), connect, store, &mcpgo.ClientOptions{Retry: fastRetry, Tenant: tenant})
	if err != nil {
		t.Fatalf("mcpgo.Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &mcpgoAgent{c: c}
}

func (a *mcpgoAgent) call(ctx context.Context, args map[string]any) (answer, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = orders.Tool
	req.Params.Arguments = args
	o, err := a.c.Call(ctx, req)
	if err != nil {
		return answer{}, err
	}
	ans := answer{attempts: o.Attempts}
	for _, c := range o.Result.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			ans.text += tc.Text
		}
	}
	if m := o.Result.Meta; m != nil {
		_, ans.marker = m.AdditionalFields[wire.MetaReplay]
	}
	return ans, nil
}

func (a *mcpgoAgent) close() error { return a.c.Close() }

// goSDKAgent is a go-sdk client through package client.
type goSDKAgent struct{ c *lclient.Client }

func newGoSDKAgent(t *testing.T, u *upstream, store ledger.Store, tenant string) *goSDKAgent {
	t.Helper()
	var bin string
	if u.url == "" {
		bin = ordersd(t)
	}
	connect := func(ctx context.Context) (*gomcp.ClientSession, error) {
		var tr gomcp.Transport
		if u.url != "" {
			tr = &gomcp.StreamableClientTransport{Endpoint: u.url, MaxRetries: -1}
		} else {
			tr = &gomcp.CommandTransport{Command: exec.Command(bin, u.args...)}
		}
		return gomcp.NewClient(&gomcp.Implementation{Name: "gosdk-agent", Version: "v1"}, nil).Connect(ctx, tr, nil)
	}
	// The policy allows: these tests are about repeats, not confirmation
	// (mcp-go marks an unannotated tool destructive, which asks).
	c, err := lclient.Dial(t.Context(), connect, store, &lclient.Options{Retry: fastRetry, Policy: allowAll, Tenant: tenant})
	if err != nil {
		t.Fatalf("client.Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &goSDKAgent{c: c}
}

func (a *goSDKAgent) call(ctx context.Context, args map[string]any) (answer, error) {
	o, err := a.c.Call(ctx, &gomcp.CallToolParams{Name: orders.Tool, Arguments: args})
	if err != nil {
		return answer{}, err
	}
	ans := answer{attempts: o.Attempts}
	for _, c := range o.Result.Content {
		if tc, ok := c.(*gomcp.TextContent); ok {
			ans.text += tc.Text
		}
	}
	_, ans.marker = o.Result.Meta[wire.MetaReplay]
	return ans, nil
}

func (a *goSDKAgent) close() error { return a.c.Close() }

// pair is a client SDK against the other SDK's server.
type pair struct {
	name      string
	serverSDK string
	// agent is an agent of this pair's client SDK with the default tenant.
	agent func(t *testing.T, u *upstream, store ledger.Store) agent
	// tenantAgent is one with a named tenant.
	tenantAgent func(t *testing.T, u *upstream, store ledger.Store, tenant string) agent
}

var pairs = []pair{
	{"mcpgo-client/gosdk-server", "gosdk",
		func(t *testing.T, u *upstream, s ledger.Store) agent { return newMCPGoAgent(t, u, s, "") },
		func(t *testing.T, u *upstream, s ledger.Store, tenant string) agent {
			return newMCPGoAgent(t, u, s, tenant)
		}},
	{"gosdk-client/mcpgo-server", "mcpgo",
		func(t *testing.T, u *upstream, s ledger.Store) agent { return newGoSDKAgent(t, u, s, "") },
		func(t *testing.T, u *upstream, s ledger.Store, tenant string) agent {
			return newGoSDKAgent(t, u, s, tenant)
		}},
}

var wires = []string{"http", "stdio"}

// each runs f for every pair over every wire.
func each(t *testing.T, f func(t *testing.T, p pair, wireName string)) {
	for _, p := range pairs {
		for _, w := range wires {
			t.Run(p.name+"/"+w, func(t *testing.T) { f(t, p, w) })
		}
	}
}

func keyed(ctx context.Context, key string) context.Context { return caller.WithKey(ctx, key) }

//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package main

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/mcptest"
)

var payArgs = map[string]any{"amount_cents": 1250, "currency": "EUR", "payee": "acme"}

func TestProxyPayments(t *testing.T) {
	_, payments := binaries(t)
	type testCase struct {
		name     string
		over     string
		decision string // the host's answer to the confirmation
		wantPaid int
	}
	var tests []testCase
	for _, over := range proxyTransports {
		tests = append(tests,
			testCase{name: over + "/approved in the host", over: over, decision: "approve_once", wantPaid: 1},
			testCase{name: over + "/denied in the host", over: over, decision: "deny", wantPaid: 0})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := t.TempDir() + "/pay.db"
			cs, ev := proxyHost(t, tc.over, proxyEnv(t), elicitAnswer(tc.decision), "--", payments, "-db", db)
			ctx := context.Background()

			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatalf("tools/list = %v", err)
				}
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if want := []string{"create_payment", "find_payment", "get_payment", "ledger_list", "ledger_status"}; !slices.Equal(names, want) {
				t.Errorf("tools/list = %v; want %v", names, want)
			}

			first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs})
			if err != nil {
				t.Fatalf("create_payment = %v", err)
			}
			if msg := <-ev.elicits; !strings.Contains(msg, "create_payment") {
				t.Errorf("confirmation %q does not name create_payment", msg)
			}
			if first.IsError != (tc.wantPaid == 0) {
				t.Errorf("create_payment = %q (isError %v); want isError %v", proxyResultText(first), first.IsError, tc.wantPaid == 0)
			}
			// The model asks again: answered from the ledger, not asked again.
			second, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs})
			if err != nil {
				t.Fatalf("create_payment again = %v", err)
			}
			if tc.wantPaid == 1 {
				if _, ok := second.Meta[client.MetaReplay]; !ok || proxyResultText(second) != proxyResultText(first) {
					t.Errorf("repeat = %q, _meta %v; want a replay of %q", proxyResultText(second), second.Meta, proxyResultText(first))
				}
			}
			select {
			case msg := <-ev.elicits:
				t.Errorf("the repeat asked again: %q", msg)
			default:
			}
			if got := paymentsIn(t, db); got != tc.wantPaid {
				t.Errorf("payments made = %d; want %d", got, tc.wantPaid)
			}

			status, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ledger_list", Arguments: map[string]any{}})
			if err != nil || !strings.Contains(proxyResultText(status), "create_payment") {
				t.Errorf("ledger_list = %q, %v; want the create_payment record", proxyResultText(status), err)
			}
		})
	}
}

// paymentsIn counts every payment in the payments database, whatever its
// key; the proxy minted the keys, so the test does not know them.
func paymentsIn(t *testing.T, db string) int {
	t.Helper()
	sdb, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatalf("opening %s: %v", db, err)
	}
	defer sdb.Close()
	var n int
	if err := sdb.QueryRow(`SELECT count(*) FROM payments`).Scan(&n); err != nil {
		t.Fatalf("counting payments in %s: %v", db, err)
	}
	return n
}

func TestProxyDeniesWithNoOneToAsk(t *testing.T) {
	_, payments := binaries(t)
	db := t.TempDir() + "/pay.db"
	cs, _ := connectStdioHost(t, proxyEnv(t), nil, "--", payments, "-db", db)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs})
	if err != nil {
		t.Fatalf("create_payment = %v", err)
	}
	if !res.IsError || !strings.Contains(proxyResultText(res), "--policy") {
		t.Errorf("create_payment = %q (isError %v); want a denial naming --policy", proxyResultText(res), res.IsError)
	}
	if got := paymentsIn(t, db); got != 0 {
		t.Errorf("payments made = %d; want 0", got)
	}
}

func TestProxyLostResponse(t *testing.T) {
	transports := []struct {
		name  string
		start func(t *testing.T, s *mcptest.Server, opts *mcptest.Options) *mcp.ClientSession
	}{
		{"stdio", func(t *testing.T, _ *mcptest.Server, opts *mcptest.Options) *mcp.ClientSession {
			// The upstream is this test binary, serving mcptest on stdio.
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			// The proxy passes its environment on to the upstream it starts.
			var childEnv []string
			for _, kv := range mcptest.Command(t, opts).Env {
				if strings.HasPrefix(kv, "MCPTEST_") {
					childEnv = append(childEnv, kv)
				}
			}
			cs, _ := connectStdioHost(t, proxyEnv(t, childEnv...), nil, "--", exe, "-test.run=^$")
			return cs
		}},
		{"http", func(t *testing.T, s *mcptest.Server, _ *mcptest.Options) *mcp.ClientSession {
			endpoint := listeningProxy(t, proxyEnv(t), "--url", mcptest.ServeHTTP(t, s))
			cs, _ := dialProxyHost(t, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
			return cs
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			opts := &mcptest.Options{Idempotent: true, StateFile: t.TempDir() + "/state.jsonl"}
			s := mcptest.New(opts)
			t.Cleanup(func() { s.Close() })
			cs := tr.start(t, s, opts)
			s.Script(mcptest.DropAfterExecute())
			args := map[string]any{"id": "order-1", "amount": 10}
			for i := range 2 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write", Arguments: args})
				if err != nil || res.IsError {
					t.Fatalf("write #%d = %v, %v; want a result", i+1, res, err)
				}
			}
			if n := s.TotalExecutions(); n != 1 {
				t.Errorf("write executed %d times after a lost response and a repeat; want 1", n)
			}
			if keys := s.KeysSeen(); len(keys) < 2 || len(slices.Compact(slices.Clone(keys))) != 1 {
				t.Errorf("keys seen = %v; want one key, sent on every attempt", keys)
			}
		})
	}
}

func TestProxyPassesThroughResourcesPromptsNotifications(t *testing.T) {
	for _, over := range proxyTransports {
		t.Run(over, func(t *testing.T) { testPassThrough(t, over) })
	}
}

func testPassThrough(t *testing.T, over string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cs, ev := proxyHost(t, over, proxyEnv(t, envTestUpstream+"=notes"), nil, "--", exe, "-test.run=^$")
	ctx := context.Background()

	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "note://1"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello from note 1" {
		t.Errorf("resources/read note://1 = %+v, %v; want hello from note 1", rr, err)
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 1 {
		t.Errorf("resources/templates/list = %+v, %v; want one template", lt, err)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada" {
		t.Errorf("prompts/get greet = %+v, %v; want Hello, Ada", gp, err)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("logging/setLevel = %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chatty", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil || proxyResultText(res) != "done" {
		t.Fatalf("chatty = %v, %v; want done", res, err)
	}
	if got := ev.next(t, "log:"); got != "log:info:working" {
		t.Errorf("log notification = %q; want log:info:working", got)
	}
	if got := ev.next(t, "progress:"); got != "progress:p1:1/2" {
		t.Errorf("progress notification = %q; want progress:p1:1/2", got)
	}
}

func TestProxyBadInput(t *testing.T) {
	env := proxyEnv(t)
	tests := []struct {
		name  string
		args  []string
		code  int
		hints []string
	}{
		{"no upstream", []string{"proxy"}, exitUsage, []string{"agentctl proxy -- CMD ARGS"}},
		{"both upstreams", []string{"proxy", "--url", "http://127.0.0.1:1/", "--", "x"}, exitUsage, []string{"pass one of them"}},
		{"argument before --", []string{"proxy", "payments"}, exitUsage, []string{"after --"}},
		{"bad url", []string{"proxy", "--url", "ftp://x"}, exitUsage, []string{"http://"}},
		{"listen beyond loopback", []string{"proxy", "--listen", "0.0.0.0:0", "--", "x"}, exitUsage, []string{"loopback"}},
		{"bad policy", []string{"proxy", "--policy", "/nonexistent/policy.json", "--", "x"}, exitUsage, []string{"policy"}},
		{"command not found", []string{"proxy", "--", "/nonexistent/mcp-server"}, exitUnreachable, []string{"check the command after --"}},
		{"refused url", []string{"proxy", "--url", mcptest.RefusedURL(t)}, exitUnreachable, []string{"cannot reach"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := proxyCommand(t, env, tc.args...)
			var out, errb proxyLog
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			o := outcome{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
			if err != nil && cmd.ProcessState == nil {
				t.Fatalf("agentctl %q: %v", tc.args, err)
			}
			o.wantExit(t, tc.code, tc.hints...)
		})
	}
}

// TestProxyListenLedgerSessions: with --listen, two host sessions calling
// the same tool with the same arguments are two operations (each host
// session is its own ledger session), unless --session makes them share
// one, when the second is a replay.
func TestProxyListenLedgerSessions(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantExecs int
	}{
		{"own session each", nil, 2},
		{"--session shared", []string{"--session", "agent-7"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mcptest.New(&mcptest.Options{})
			t.Cleanup(func() { s.Close() })
			env := slices.DeleteFunc(proxyEnv(t), func(kv string) bool { return strings.HasPrefix(kv, "MCPLEDGER_SESSION=") })
			endpoint := listeningProxy(t, env, append(tc.args, "--url", mcptest.ServeHTTP(t, s))...)
			args := map[string]any{"id": "order-1", "amount": 10}
			for i := range 2 {
				cs, _ := dialProxyHost(t, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write", Arguments: args})
				if err != nil || res.IsError {
					t.Fatalf("host %d: write = %v, %v; want a result", i+1, res, err)
				}
			}
			if n := s.TotalExecutions(); n != tc.wantExecs {
				t.Errorf("write executed %d times for two host sessions; want %d", n, tc.wantExecs)
			}
		})
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/wire"
)

// A host that puts its key in the idempotency_key argument (the payments
// tool declares it, and its instructions ask for it) gets that key as the
// operation's, at the proxy as at the server: two host sessions with one
// key make one payment, and the second is the first's replay. Over stdio
// the two host sessions are two proxy runs on one ledger; over HTTP, two
// sessions of one proxy. Each host session is a ledger session of its
// own, so the re-planning guard does not join them: only the key does.
func TestProxyHostArgumentKeyIsTheKey(t *testing.T) {
	_, payments := binaries(t)
	for _, over := range proxyTransports {
		t.Run(over, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "pay.db")
			policy := allowPayments(t, dir)
			ledgerPath := filepath.Join(dir, "proxy.db")
			env := append(proxyEnv(t), "MCPLEDGER_LEDGER="+ledgerPath, "MCPLEDGER_SESSION=")
			args := []string{"--policy", policy, "--", payments, "-db", db}
			var hosts [2]*mcp.ClientSession
			if over == "stdio" {
				for i := range hosts {
					hosts[i], _ = connectStdioHost(t, env, nil, append([]string{"--session", fmt.Sprintf("host-%d", i)}, args...)...)
				}
			} else {
				url := listeningProxy(t, env, args...)
				for i := range hosts {
					hosts[i], _ = dialProxyHost(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var texts [2]string
			for i, h := range hosts {
				res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "create_payment", Arguments: map[string]any{
					"amount_cents": 55, "currency": "EUR", "payee": "IKH", "idempotency_key": "host-key-1"}})
				if err != nil || res.IsError {
					t.Fatalf("host session %d: create_payment = %+v, %v; want the payment", i, res, err)
				}
				texts[i] = proxyResultText(res)
				_, replay := res.Meta[wire.MetaReplay]
				if replay != (i == 1) {
					t.Errorf("host session %d: replay marker %v; want %v", i, res.Meta[wire.MetaReplay], i == 1)
				}
			}
			if texts[1] != texts[0] {
				t.Errorf("second answer %q; want the first's %q", texts[1], texts[0])
			}
			if n := paymentsIn(t, db); n != 1 {
				t.Errorf("payments = %d; want 1", n)
			}
			rec := proxyRecord(t, ledgerPath, "host-key-1")
			if rec == nil || rec.State != ledger.StateSucceeded {
				t.Errorf("the proxy's record of key host-key-1 = %+v; want it SUCCEEDED", rec)
			}
		})
	}
}

// A cancelled request gets no response (the MCP spec: the receiver should
// not answer it), and never one with code 0, which is no JSON-RPC code;
// the proxy's record of the call, cancelled after it reached the
// upstream, stays UNKNOWN, never FAILED. Read from the proxy's raw stdout,
// for a host that sends its own key and one that does not.
func TestProxyStdioCancelledRequestGetsNoAnswer(t *testing.T) {
	for _, key := range []string{"cancel-1", ""} {
		name := map[bool]string{true: "host key", false: "proxy key"}[key != ""]
		t.Run(name, func(t *testing.T) { testCancelledRequest(t, key) })
	}
}

func testCancelledRequest(t *testing.T, key string) {
	_, payments := binaries(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "pay.db")
	ledgerPath := filepath.Join(dir, "proxy.db")
	env := append(proxyEnv(t), "MCPLEDGER_LEDGER="+ledgerPath)
	cmd := proxyCommand(t, env, "proxy", "--policy", allowPayments(t, dir), "--", payments, "-db", db, "-fault", "handler-committed=sleep:5s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &proxyLog{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting agentctl proxy: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("writing %q: %v\nstderr:\n%s", line, err, stderr.String())
		}
	}
	// until reads lines until the answer to id.
	until := func(id any) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed before the answer to %v; lines %q\nstderr:\n%s", id, seen, stderr.String())
				}
				seen = append(seen, l)
				var a rpcAnswer
				if json.Unmarshal([]byte(l), &a) == nil && a.ID == id {
					return
				}
			case <-time.After(time.Minute):
				t.Fatalf("no answer to %v in a minute; lines %q\nstderr:\n%s", id, seen, stderr.String())
			}
		}
	}
	send(rawInitialize)
	until(float64(1))
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(callWithArgs(2, `{"amount_cents":1250,"currency":"EUR","payee":"acme"}`, key))
	// The payment is committed and the upstream's handler still runs: the
	// request has reached the tool.
	waitFor(t, "the payment", func() bool { return paymentsIn(t, db) == 1 })
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user pressed stop"}}`)
	waitFor(t, "the cancelled call's record to settle", func() bool {
		rec := proxyRecord(t, ledgerPath, key)
		return rec != nil && rec.State != ledger.StateProcessing
	})
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	until(float64(3))
	stdin.Close()
	for l := range lines {
		seen = append(seen, l)
	}
	if err := <-exited; err != nil {
		t.Errorf("agentctl proxy after stdin closed: %v; want exit 0\nstderr:\n%s", err, stderr.String())
	}
	for _, l := range seen {
		var a rpcAnswer
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Errorf("stdout line %q is not JSON: %v", l, err)
			continue
		}
		if a.ID == float64(2) {
			t.Errorf("the cancelled request was answered: %s; want no response", l)
		}
		if a.Error != nil && a.Error.Code == 0 {
			t.Errorf("stdout line %s has error code 0, which is no JSON-RPC code", l)
		}
	}
	if rec := proxyRecord(t, ledgerPath, key); rec == nil || rec.State != ledger.StateUnknown {
		t.Errorf("the proxy's record of the cancelled call = %+v; want UNKNOWN (it reached the tool)", rec)
	}
}

// allowPayments writes a policy that lets create_payment through without
// a person, and returns its path.
func allowPayments(t *testing.T, dir string) string {
	t.Helper()
	policy := filepath.Join(dir, "allow.json")
	if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"test"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return policy
}

// proxyRecord is the proxy's record of create_payment with key in the
// ledger at path (key "": its newest one), nil when there is none.
func proxyRecord(t *testing.T, path, key string) *ledger.Record {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		if strings.Contains(err.Error(), "no such file") {
			return nil
		}
		t.Fatalf("sqlite.Open(%q) = %v", path, err)
	}
	defer st.Close()
	if key == "" {
		page, err := st.List(ctx, ledger.Filter{Tenant: "default", Layer: ledger.LayerProxy, Tool: "create_payment", Limit: 1})
		if err != nil || len(page.Records) == 0 {
			return nil
		}
		return page.Records[0]
	}
	rec, err := st.Get(ctx, ledger.ID{Tenant: "default", Layer: ledger.LayerProxy, Tool: "create_payment", Key: key})
	if err != nil {
		return nil
	}
	return rec
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/wire"
)

// Fifty identical calls at once through a real agentctl proxy process to
// the payments example: one payment, and every answer but the one that ran
// carries the replay marker, so no host takes a replay for a fresh
// execution.
func TestProxyConcurrentDuplicatesAreReplays(t *testing.T) {
	_, payments := binaries(t)
	const calls = 50
	cases := []struct {
		name     string
		over     string
		sessions int  // host sessions the calls are spread over
		keyed    bool // the host sends its own key; else the re-planning guard matches them
	}{
		{name: "stdio/one key", over: "stdio", sessions: 1, keyed: true},
		{name: "stdio/re-planned without a key", over: "stdio", sessions: 1},
		{name: "http/one key from fifty host sessions", over: "http", sessions: calls, keyed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "pay.db")
			policy := filepath.Join(dir, "allow.json")
			if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"test"}]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--policy", policy, "--", payments, "-db", db}
			env := proxyEnv(t)
			hosts := make([]*mcp.ClientSession, tc.sessions)
			if tc.over == "stdio" {
				hosts[0], _ = connectStdioHost(t, env, nil, args...)
			} else {
				url := listeningProxy(t, env, args...)
				for i := range hosts {
					hosts[i], _ = dialProxyHost(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := make(chan struct{})
			results := make([]*mcp.CallToolResult, calls)
			errs := make([]error, calls)
			var wg sync.WaitGroup
			for i := range calls {
				wg.Go(func() {
					p := &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs}
					if tc.keyed {
						p.Meta = mcp.Meta{wire.MetaKey: "dup-50"}
					}
					<-start
					results[i], errs[i] = hosts[i%len(hosts)].CallTool(ctx, p)
				})
			}
			close(start)
			wg.Wait()

			var fresh, replays atomic.Int32
			first := ""
			for i, res := range results {
				if errs[i] != nil {
					t.Fatalf("call %d = %v; want a result", i, errs[i])
				}
				text := proxyResultText(res)
				if res.IsError {
					t.Fatalf("call %d = isError %q (_meta %v); want the payment", i, text, res.Meta)
				}
				if first == "" {
					first = text
				}
				if text != first {
					t.Errorf("call %d answered %q; want the one payment %q", i, text, first)
				}
				if _, ok := res.Meta[wire.MetaReplay]; ok {
					replays.Add(1)
				} else {
					fresh.Add(1)
				}
			}
			if got := paymentsIn(t, db); got != 1 {
				t.Errorf("payments made = %d; want 1", got)
			}
			if fresh.Load() != 1 || replays.Load() != calls-1 {
				t.Errorf("answers with no replay marker = %d, with one = %d; want 1 and %d (every answer but the one that ran is marked)",
					fresh.Load(), replays.Load(), calls-1)
			}
			for i, res := range results {
				if m, ok := res.Meta[wire.MetaReplay].(map[string]any); ok {
					if _, ok := m["key"].(string); !ok || m["state"] != "SUCCEEDED" {
						t.Errorf("call %d: replay marker %v; want its key and state SUCCEEDED", i, m)
						break
					}
				}
			}
		})
	}
}

// The proxy's own ledger is locked after the upstream paid and before the
// proxy records the answer: the proxy cannot say what happened, so a host
// that sent its own key gets -31003 outcome_unknown naming the key (as a
// key-aware server answers), and a host that did not gets an isError
// result whose _meta error names the key and UNKNOWN; neither is a plain
// tool error. One payment either way.
func TestProxyLostLedgerWriteIsUnknownToTheHost(t *testing.T) {
	_, payments := binaries(t)
	for _, keyed := range []bool{true, false} {
		name := map[bool]string{true: "host key", false: "proxy key"}[keyed]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "pay.db")
			policy := filepath.Join(dir, "allow.json")
			if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"test"}]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			ledgerPath := filepath.Join(dir, "proxy.db")
			env := append(proxyEnv(t), "MCPLEDGER_LEDGER="+ledgerPath)
			url := listeningProxy(t, env, "--wait", "1s", "--policy", policy, "--", payments, "-db", db, "-fault", "handler-committed=sleep:3s")
			host, _ := dialProxyHost(t, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			p := &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs}
			if keyed {
				p.Meta = mcp.Meta{wire.MetaKey: "lost-write"}
			}
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := host.CallTool(context.Background(), p)
				done <- answer{res, err}
			}()
			waitFor(t, "the payment", func() bool { return paymentsIn(t, db) == 1 })
			holdLock(t, ledgerPath)
			got := <-done
			if keyed {
				je, ok := errors.AsType[*jsonrpc.Error](got.err)
				if !ok || je.Code != -31003 {
					t.Fatalf("create_payment = %+v, %v; want JSON-RPC error -31003", got.res, got.err)
				}
				var data struct {
					Reason, Key string
				}
				if err := json.Unmarshal(je.Data, &data); err != nil || data.Reason != "outcome_unknown" || data.Key != "lost-write" {
					t.Errorf("-31003 data = %s (%v); want reason outcome_unknown and key lost-write", je.Data, err)
				}
			} else {
				if got.err != nil || got.res == nil || !got.res.IsError {
					t.Fatalf("create_payment = %+v, %v; want an isError result", got.res, got.err)
				}
				m, _ := got.res.Meta[wire.MetaError].(map[string]any)
				if key, _ := m["key"].(string); m["state"] != "UNKNOWN" || key == "" {
					t.Errorf("_meta error = %v; want state UNKNOWN and the key", got.res.Meta[wire.MetaError])
				}
			}
			if n := paymentsIn(t, db); n != 1 {
				t.Errorf("payments = %d; want 1", n)
			}
		})
	}
}

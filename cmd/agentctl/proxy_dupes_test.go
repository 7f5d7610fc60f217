package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

package mcptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/retry"
)

func TestToolsAndCapability(t *testing.T) {
	ctx := context.Background()
	for _, idem := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "idempotent"}[idem], func(t *testing.T) {
			s := mcptest.New(&mcptest.Options{Idempotent: idem})
			cs := s.ConnectInMemory(ctx, t, nil)

			_, advertised := cs.InitializeResult().Capabilities.Experimental[mcptest.CapabilityKey]
			if advertised != idem {
				t.Errorf("capability %s advertised = %v; want %v", mcptest.CapabilityKey, advertised, idem)
			}
			tools := map[string]*mcp.Tool{}
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatalf("Tools = %v", err)
				}
				tools[tool.Name] = tool
			}
			for _, tc := range []struct {
				tool     string
				hasKey   bool
				readOnly bool
			}{{"write", true, false}, {"write_nokey", false, false}, {"read", false, true}} {
				tool := tools[tc.tool]
				if tool == nil {
					t.Fatalf("tool %q missing from %v", tc.tool, tools)
				}
				schema, err := json.Marshal(tool.InputSchema)
				if err != nil {
					t.Fatal(err)
				}
				var parsed struct {
					Properties map[string]any `json:"properties"`
				}
				if err := json.Unmarshal(schema, &parsed); err != nil {
					t.Fatal(err)
				}
				if _, ok := parsed.Properties[mcptest.ArgKey]; ok != tc.hasKey {
					t.Errorf("tool %q declares %s = %v; want %v", tc.tool, mcptest.ArgKey, ok, tc.hasKey)
				}
				ro := tool.Annotations != nil && tool.Annotations.ReadOnlyHint
				if ro != tc.readOnly {
					t.Errorf("tool %q readOnlyHint = %v; want %v", tc.tool, ro, tc.readOnly)
				}
			}
		})
	}
}

func TestCountsPerKey(t *testing.T) {
	ctx := context.Background()
	s := mcptest.New(nil)
	cs := s.ConnectInMemory(ctx, t, nil)

	calls := []struct {
		name string
		p    *mcp.CallToolParams
	}{
		{"meta key", &mcp.CallToolParams{Name: "write", Meta: mcp.Meta{mcptest.MetaKey: "k1"}, Arguments: map[string]any{"id": "a", "amount": 1}}},
		{"meta key again", &mcp.CallToolParams{Name: "write", Meta: mcp.Meta{mcptest.MetaKey: "k1"}, Arguments: map[string]any{"id": "a", "amount": 1}}},
		{"argument key", &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": "a", "amount": 1, "idempotency_key": "k2"}}},
		{"meta wins over argument", &mcp.CallToolParams{Name: "write", Meta: mcp.Meta{mcptest.MetaKey: "k3"}, Arguments: map[string]any{"id": "a", "amount": 1, "idempotency_key": "k2"}}},
		{"no key", &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": "a", "amount": 1}}},
		{"nokey tool with meta", &mcp.CallToolParams{Name: "write_nokey", Meta: mcp.Meta{mcptest.MetaKey: "k4"}, Arguments: map[string]any{"id": "a", "amount": 1}}},
	}
	for _, c := range calls {
		res, err := cs.CallTool(ctx, c.p)
		if err != nil || res.IsError {
			t.Fatalf("%s: CallTool = %v, %v; want a result", c.name, text(res), err)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read"}); err != nil {
		t.Fatalf("read: %v", err)
	}

	for key, want := range map[string]int{"k1": 2, "k2": 1, "k3": 1, "": 1, "k4": 1, "nope": 0} {
		if got := s.Executions(key); got != want {
			t.Errorf("Executions(%q) = %d; want %d", key, got, want)
		}
	}
	if got := s.TotalExecutions(); got != 6 {
		t.Errorf("TotalExecutions() = %d; want 6", got)
	}
	if got, want := s.KeysSeen(), []string{"k1", "k1", "k2", "k3", "", "k4"}; !slices.Equal(got, want) {
		t.Errorf("KeysSeen() = %q; want %q", got, want)
	}
}

func TestBadArguments(t *testing.T) {
	ctx := context.Background()
	s := mcptest.New(nil)
	cs := s.ConnectInMemory(ctx, t, nil)
	for _, tc := range []struct {
		name string
		p    *mcp.CallToolParams
	}{
		{"nokey tool given the key argument", &mcp.CallToolParams{Name: "write_nokey", Arguments: map[string]any{"id": "a", "amount": 1, "idempotency_key": "k"}}},
		{"missing amount", &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": "a"}}},
		{"unknown argument", &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": "a", "amount": 1, "x": 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CallTool(ctx, tc.p)
			if !errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}) {
				t.Errorf("CallTool(%v) = %v; want -32602", tc.p.Arguments, err)
			}
		})
	}
	if n := s.TotalExecutions(); n != 0 {
		t.Errorf("TotalExecutions() = %d; want 0 after rejected calls", n)
	}
}

func TestIdempotentStandIn(t *testing.T) {
	ctx := context.Background()
	s := mcptest.New(&mcptest.Options{Idempotent: true})
	cs := s.ConnectInMemory(ctx, t, nil)

	first, err := write(ctx, cs, "pay-1", "inv-1", 10)
	if err != nil {
		t.Fatal(err)
	}
	again, err := write(ctx, cs, "pay-1", "inv-1", 10.0)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Errorf("repeated key answered %s; want the first result %s", b, a)
	}
	if n := s.Executions("pay-1"); n != 1 {
		t.Errorf("Executions(pay-1) = %d; want 1", n)
	}

	_, err = write(ctx, cs, "pay-1", "inv-1", 99)
	if retry.Reason(client.Neutral(err)) != ledger.ReasonKeyReused || !errors.Is(err, &jsonrpc.Error{Code: ledger.CodeKeyReused}) {
		t.Errorf("same key, other amount: CallTool = %v; want -31001 key_reused", err)
	}
	for range 2 {
		if _, err := write(ctx, cs, "", "inv-2", 5); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Executions(""); n != 2 {
		t.Errorf("Executions(\"\") = %d; want 2: calls without a key are not deduplicated", n)
	}
}

func TestIdempotentConcurrentSameKey(t *testing.T) {
	ctx := context.Background()
	s := mcptest.New(&mcptest.Options{Idempotent: true})
	cs := s.ConnectInMemory(ctx, t, nil)
	var wg sync.WaitGroup
	var failures atomic.Int32
	results := make([]string, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := write(ctx, cs, "same", "x", 1)
			if err != nil {
				failures.Add(1)
				return
			}
			results[i] = text(res)
		}()
	}
	wg.Wait()
	if f := failures.Load(); f != 0 {
		t.Fatalf("%d of 20 concurrent calls failed", f)
	}
	if n := s.Executions("same"); n != 1 {
		t.Errorf("Executions(same) = %d after 20 concurrent calls; want 1", n)
	}
	for _, r := range results {
		if r != results[0] {
			t.Errorf("results differ: %q vs %q", r, results[0])
		}
	}
}

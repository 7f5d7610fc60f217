package proxy_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cost a host pays for the proxy, over in-memory transports and a
// SQLite ledger: a new operation (claim, send, record) and a repeat that is
// answered from the ledger (no upstream call at all).

func BenchmarkCallNew(b *testing.B) {
	u := newUpstream()
	p := startProxy(b, newStore(b), u.transport, nil)
	h := connectHost(b, p, hostOptions{}).cs
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": strconv.Itoa(i)}})
		if err != nil || res.IsError {
			b.Fatalf("add_note = %v, %v", res, err)
		}
	}
	b.StopTimer()
	if n := u.notes.Load(); n != int64(b.N) {
		b.Fatalf("add_note ran %d times for %d new operations", n, b.N)
	}
}

func BenchmarkCallReplay(b *testing.B) {
	u := newUpstream()
	p := startProxy(b, newStore(b), u.transport, nil)
	h := connectHost(b, p, hostOptions{}).cs
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": "same"}}
	if _, err := h.CallTool(ctx, params); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		res, err := h.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("add_note = %v, %v", res, err)
		}
	}
	b.StopTimer()
	if n := u.notes.Load(); n != 1 {
		b.Fatalf("add_note ran %d times; want 1", n)
	}
}

// BenchmarkDirect is the same new call without the proxy, for comparison.
func BenchmarkDirect(b *testing.B) {
	u := newUpstream()
	ctx := context.Background()
	tr, err := u.transport(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	b.ResetTimer()
	for i := range b.N {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": strconv.Itoa(i)}}); err != nil {
			b.Fatal(err)
		}
	}
}

package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkProbe sets the inline probe path beside a plain replay and the
// probe's own round trip, in one run, over an in-memory session and a
// SQLite ledger (issue 38, "Performance": resolution within 10 ms of the
// probe's round trip):
//
//   - replay: a repeat of a finished call, answered from the ledger;
//   - probe-round-trip: the probe tool called directly on the session;
//   - inline-probe: a call that meets an UNKNOWN record of its key, asks
//     the probe, settles the record through the ledger and answers the
//     replay of what the probe found. Making the UNKNOWN record is not
//     timed.
func BenchmarkProbe(b *testing.B) {
	ctx := context.Background()
	b.Run("replay", func(b *testing.B) {
		pc := newProbeClient(b, probePolicy)
		if _, err := pc.pay("done"); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := pc.pay("done"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("probe-round-trip", func(b *testing.B) {
		pc := newProbeClient(b, probePolicy)
		pc.shop.pretendPaid("k", "pay_lost")
		ct, st := mcp.NewInMemoryTransports()
		if _, err := pc.shop.server().Connect(ctx, st, nil); err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		b.ResetTimer()
		for range b.N {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find", Arguments: map[string]any{"ref": "k"}})
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("inline-probe", func(b *testing.B) {
		pc := newProbeClient(b, probePolicy)
		for i := range b.N {
			b.StopTimer()
			key := fmt.Sprint("k-", i)
			strandUnknown(b, pc.store, key)
			pc.shop.pretendPaid(key, "pay_lost")
			b.StartTimer()
			res, err := pc.pay(key)
			if err != nil || textOf(res) != "paid pay_lost" {
				b.Fatal(res, err)
			}
		}
	})
}

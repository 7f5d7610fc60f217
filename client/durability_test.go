package client_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcptest"
)

// durabilitySpy is a real store that notes the durability each write
// was asked for.
type durabilitySpy struct {
	ledger.Store
	mu    sync.Mutex // guards asked
	asked map[ledger.State]ledger.Durability
}

func (s *durabilitySpy) Transition(ctx context.Context, t ledger.Transition) (*ledger.Record, error) {
	s.mu.Lock()
	s.asked[t.To] = ledger.DurabilityOf(ctx)
	s.mu.Unlock()
	return s.Store.Transition(ctx, t)
}

// Under WriteBehind the client asks the store to write the outcome
// behind, and only the outcome; another process reads it at once, and a
// repeat is a replay, not a second execution.
func TestWriteBehindOutcome(t *testing.T) {
	for _, d := range []ledger.Durability{ledger.Durable, ledger.WriteBehind} {
		t.Run(map[ledger.Durability]string{ledger.Durable: "durable", ledger.WriteBehind: "write-behind"}[d], func(t *testing.T) {
			ctx := context.Background()
			srv := mcptest.New(nil)
			t.Cleanup(func() { srv.Close() })
			path := filepath.Join(t.TempDir(), "ledger.db")
			st, err := sqlite.Open(ctx, path, nil) // FULL: the durable default
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			spy := &durabilitySpy{Store: st, asked: map[ledger.State]ledger.Durability{}}
			c := client.New(srv.ConnectInMemory(ctx, t, nil), spy, &client.Options{Policy: allow(), Durability: d})
			kctx := client.WithKey(ctx, "wb")
			if _, err := c.CallTool(kctx, write("a", 1)); err != nil {
				t.Fatalf("CallTool = %v", err)
			}
			if got := spy.asked[ledger.StateSucceeded]; got != d {
				t.Fatalf("outcome written with durability %d; want %d", got, d)
			}
			other, err := sqlite.Open(ctx, path, &sqlite.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			rec, err := other.Get(ctx, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: "wb"})
			if err != nil || rec.State != ledger.StateSucceeded || len(rec.Result) == 0 {
				t.Fatalf("other store Get(wb) = %v, %v; want SUCCEEDED with its result", rec, err)
			}
			o, err := c.Call(kctx, write("a", 1))
			if err != nil || !o.Replayed {
				t.Fatalf("repeat = %+v, %v; want a replay", o, err)
			}
			if got := srv.Executions("wb"); got != 1 {
				t.Fatalf("Executions = %d; want 1", got)
			}
		})
	}
}

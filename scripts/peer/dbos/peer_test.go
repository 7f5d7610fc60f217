package peer_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/mcptest"
)

// replayKeys is how many distinct finished ids the replay sub-benchmarks
// cycle through, for every contender alike: enough that one hot row or
// map entry does not stand for the lot, few enough that DBOS finishes
// them in a second or two before the clock starts.
const replayKeys = 256

// contender is one way of making the protected call.
type contender struct {
	srv *mcptest.Server
	// call runs the operation keyed key with write arguments id and
	// returns the tool result and whether it is a recorded one (replayed
	// reports false when the contender cannot tell; the server's
	// execution count tells then).
	call func(ctx context.Context, key, id string) (res *mcp.CallToolResult, replayed bool, err error)
	// next numbers fresh keys across sub-benchmarks and their runs.
	next atomic.Int64
}

// write is the call every contender makes, as in client's benchmarks.
func write(id string, amount float64) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": id, "amount": amount}}
}

// allow lets every tool through, as client's benchmarks do.
func allow() *confirm.Policy {
	return &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}
}

// newServer is the in-memory mcptest server and session of client's
// BenchmarkCallToolBare.
func newServer(b *testing.B) (*mcptest.Server, *mcp.ClientSession) {
	srv := mcptest.New(nil)
	b.Cleanup(func() { srv.Close() })
	return srv, srv.ConnectInMemory(context.Background(), b, nil)
}

// check fails unless res is the answer to the write of id.
func check(res *mcp.CallToolResult, id string) error {
	if res == nil || res.IsError {
		return fmt.Errorf("call %s = %+v; want a successful write", id, res)
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || sc["id"] != id {
		return fmt.Errorf("call %s answered %v; want the write of id %s", id, res.StructuredContent, id)
	}
	return nil
}

// parallel runs f from 64 goroutines (on any GOMAXPROCS), as the ledgers'
// parallel benchmarks do. A failure stops the benchmark at its end.
func parallel(b *testing.B, f func() error) {
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	var failed atomic.Bool
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if failed.Load() {
				continue
			}
			if err := f(); err != nil && !failed.Swap(true) {
				b.Error(err)
			}
		}
	})
}

// first makes a new operation: a fresh key, executed once.
func (c *contender) first(ctx context.Context) error {
	n := c.next.Add(1)
	key, id := fmt.Sprintf("f%d", n), fmt.Sprint(n)
	res, replayed, err := c.call(ctx, key, id)
	if err != nil {
		return fmt.Errorf("first call %s: %w", key, err)
	}
	if replayed {
		return fmt.Errorf("first call %s was answered as a replay", key)
	}
	return check(res, id)
}

// replay runs finished operation i (of replayKeys) again.
func (c *contender) replay(ctx context.Context, i int) error {
	key, id := fmt.Sprintf("r%d", i), fmt.Sprint(-1-i)
	res, _, err := c.call(ctx, key, id)
	if err != nil {
		return fmt.Errorf("replay %s: %w", key, err)
	}
	return check(res, id)
}

// populate finishes the replayKeys operations the replay benchmarks run
// again.
func populate(b *testing.B, c *contender) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, replayKeys)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < replayKeys; i += 16 {
				key, id := fmt.Sprintf("r%d", i), fmt.Sprint(-1-i)
				res, _, err := c.call(ctx, key, id)
				if err == nil {
					err = check(res, id)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("finishing the operations to replay: %v", err)
	}
}

// run measures c: first and replayed calls, by one caller and by 64.
// Replays must never reach the server: run fails if one does.
func run(b *testing.B, c *contender) {
	ctx := context.Background()
	populate(b, c)
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if err := c.first(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first_64way", func(b *testing.B) {
		parallel(b, func() error { return c.first(ctx) })
	})
	executed := c.srv.TotalExecutions()
	b.Run("replay", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			// A stride coprime with replayKeys visits every key in an
			// order unlike the order they were written in.
			if err := c.replay(ctx, (i*101)%replayKeys); err != nil {
				b.Fatal(err)
			}
		}
	})
	var next atomic.Int64
	b.Run("replay_64way", func(b *testing.B) {
		parallel(b, func() error { return c.replay(ctx, int(next.Add(101)%replayKeys)) })
	})
	if n := c.srv.TotalExecutions() - executed; n != 0 {
		b.Fatalf("replays executed the tool %d more times; want 0", n)
	}
}

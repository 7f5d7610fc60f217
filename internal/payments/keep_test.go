package payments_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/internal/gctest"
	"github.com/mcpledger/mcpledger/internal/payments"
)

// markerKey carries a request's marker in its handler's context.
type markerKey struct{}

// A call leaves nothing of itself behind in the App: the payments' writer
// and the guard's ledger reuse their batch arrays, and a job or op left in
// one held its handler's context, and everything reachable from it, until
// a later batch overwrote it. Each call's context carries a marker of its
// own (a receiving middleware puts it there); once the sessions that paid
// together are closed, every marker and every session must be collected.
func TestClosedSessionsAreFreed(t *testing.T) {
	app := open(t, payments.Config{})
	var mu sync.Mutex
	var markers []weak.Pointer[[4096]byte]
	app.Server().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			m := new([4096]byte)
			mu.Lock()
			markers = append(markers, weak.Make(m))
			mu.Unlock()
			return next(context.WithValue(ctx, markerKey{}, m), method, req)
		}
	})
	ctx := context.Background()
	const n = 24
	sessions := make([]weak.Pointer[mcp.ServerSession], n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := app.Server().Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = weak.Make(ss)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := pay(ctx, cs, fmt.Sprintf("keep-%d", i), 100, fmt.Sprintf("payee-%d", i))
			if err == nil && res.IsError {
				err = fmt.Errorf("isError: %v", res.Content)
			}
			if err != nil {
				errs <- fmt.Errorf("payment %d: %w", i, err)
			}
			_ = cs.Close()
			_ = ss.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mu.Lock()
	seen := markers
	mu.Unlock()
	if len(seen) != n {
		t.Fatalf("%d calls seen by the middleware; want %d", len(seen), n)
	}
	// A call is answered once its job is done, while the writer may still
	// be finishing the batch: collect until everything is gone, up to
	// 10 s. Kept by a batch array, it would stay until the next batch.
	if kept := gctest.Kept(10*time.Second, sessions); kept > 0 {
		t.Errorf("%d of %d closed sessions still reachable after 10 s; the App must keep nothing of a closed session", kept, n)
	}
	if kept := gctest.Kept(10*time.Second, seen); kept > 0 {
		t.Errorf("%d of %d calls' contexts still reachable 10 s after they were answered; the App must drop them", kept, n)
	}
}

package proxy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/internal/gctest"
)

// Host sessions that called together over streamable HTTP and closed
// leave nothing behind in the proxy: once they are gone, a collection
// frees every one of them. The SQLite ledger's writer used to keep the
// ops of its last batch, each with its caller's context, and so, through
// the proxy's values in it, a host's whole session: after a load, every
// host session the last batches served stayed resident.
func TestClosedHostSessionsAreFreed(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 48 HTTP sessions")
	}
	const n = 24
	upURL, execs := costUpstream(t)
	p, front := httpProxy(t, upURL)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := make([]*mcp.ClientSession, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL, MaxRetries: -1}, nil)
			if err != nil {
				errs <- fmt.Errorf("host %d Connect = %w", i, err)
				return
			}
			hosts[i] = cs
			for j := range 4 {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "record", Meta: mcp.Meta{client.MetaKey: fmt.Sprintf("keep-%d-%d", i, j)},
					Arguments: map[string]any{"n": i*10 + j}})
				if err == nil && res.IsError {
					err = fmt.Errorf("isError: %s", resultText(res))
				}
				if err != nil {
					errs <- fmt.Errorf("host %d call %d = %w", i, j, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var sessions []weak.Pointer[mcp.ServerSession]
	for ss := range p.Server().Sessions() {
		sessions = append(sessions, weak.Make(ss))
	}
	if len(sessions) != n {
		t.Fatalf("the proxy has %d host sessions; want %d", len(sessions), n)
	}
	for i, cs := range hosts {
		if err := cs.Close(); err != nil {
			t.Errorf("host %d Close = %v", i, err)
		}
	}
	hosts = nil
	if got, want := execs.Load(), int64(4*n); got != want {
		t.Fatalf("upstream executions = %d; want %d, one per call", got, want)
	}
	// The host sessions end on the proxy's side in goroutines of their
	// own (the upstream session is closed after the host's), a little
	// after Close returns: gctest.Kept waits for them, up to 10 s.
	kept := gctest.Kept(10*time.Second, sessions)
	if kept > 0 {
		t.Errorf("%d of %d closed host sessions still reachable 10 s after they closed; the proxy must keep nothing of them", kept, n)
	}
}

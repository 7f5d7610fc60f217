package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/internal/proxy"
)

// What the proxy may add per idle host session over streamable HTTP, on
// top of what the host and the upstream cost themselves. Goroutines: on
// the host's side its session's reader, the one serving its event stream
// and that connection's background read; on the upstream's side the
// session's reader, its event stream and that connection's two loops, and
// the one that closes the upstream session when the host session ends: 8
// (the calls' pooled connections are shared). Bytes: go-sdk's server and
// client sessions and their connections' buffers, and the ledger client.
// Before the host sessions' ledger clients shared one telemetry, each had
// an event writer of its own too (9 goroutines), and about 25 KB of metric
// attribute sets: 82 KB in all.
const (
	maxGoroutinesPerSession = 8
	maxBytesPerSession      = 64 << 10
)

// costUpstream is a streamable HTTP upstream on 127.0.0.1 with one tool
// (one the default policy lets through), whose executions it counts.
func costUpstream(t *testing.T) (url string, execs *atomic.Int64) {
	t.Helper()
	execs = new(atomic.Int64)
	srv := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	type in struct {
		N int `json:"n"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "record"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		execs.Add(1)
		return text(fmt.Sprintf("recorded %d", a.N)), nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL, execs
}

// httpProxy serves a proxy (SQLite ledger, no idle release) over
// streamable HTTP on 127.0.0.1 in front of the upstream at upURL, and
// returns it with its front server.
func httpProxy(t *testing.T, upURL string) (*proxy.Proxy, *httptest.Server) {
	t.Helper()
	p := startProxy(t, newStore(t), func(context.Context) (mcp.Transport, error) {
		// As agentctl proxy --url: the pooled transport, and the
		// upstream's event stream on.
		return &mcp.StreamableClientTransport{Endpoint: upURL}, nil
	}, &proxy.Options{IdleRelease: -1})
	front := httptest.NewServer(p.HTTPHandler(nil))
	t.Cleanup(front.Close)
	return p, front
}

// openHosts connects n host sessions to url, as agentctl's hosts do
// (go-sdk's streamable client with its event stream), each making one
// call with arguments of its own; it returns them open.
func openHosts(t *testing.T, url string, n, from int) []*mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := make([]*mcp.ClientSession, 0, n)
	for i := range n {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("host %d Connect = %v", i, err)
		}
		hosts = append(hosts, cs)
		t.Cleanup(func() { _ = cs.Close() }) // a test that failed half-way; else closed already
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "record", Arguments: map[string]any{"n": from + i}})
		if err != nil || res.IsError {
			t.Fatalf("host %d record = %v, %v; want a result", i, res, err)
		}
	}
	return hosts
}

func closeHosts(t *testing.T, hosts []*mcp.ClientSession) {
	t.Helper()
	for i, cs := range hosts {
		if err := cs.Close(); err != nil {
			t.Errorf("host %d Close = %v", i, err)
		}
	}
}

// settled is the goroutine count once it has stopped changing (no change
// over 20 checks 5 ms apart), or after 10 s: sessions end and connections
// close in goroutines of their own, a little after Close returns.
func settled() int {
	deadline := time.Now().Add(10 * time.Second)
	last, same := runtime.NumGoroutine(), 0
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for same < 20 && time.Now().Before(deadline) {
		<-tick.C
		n := runtime.NumGoroutine()
		if n == last {
			same++
			continue
		}
		last, same = n, 0
	}
	return last
}

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestHostSessionCost measures what the proxy adds per idle host session,
// over real streamable HTTP on both sides: n hosts straight to the
// upstream, then n through the proxy, each after one call; the difference
// is the proxy's, in goroutines and live heap. Once the hosts close, the
// proxy's goroutines go too.
func TestHostSessionCost(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 120 HTTP sessions")
	}
	const n = 40
	upURL, execs := costUpstream(t)
	_, front := httpProxy(t, upURL)
	// One host first, through the proxy: what the first call sets up
	// once (the redaction rules, the ledger's statements) is not a
	// session's cost.
	closeHosts(t, openHosts(t, front.URL, 1, 0))

	g0, h0 := settled(), heap()
	direct := openHosts(t, upURL, n, 1000)
	g1, h1 := settled(), heap()
	closeHosts(t, direct)
	g2, h2 := settled(), heap()
	proxied := openHosts(t, front.URL, n, 2000)
	g3, h3 := settled(), heap()
	closeHosts(t, proxied)

	if got, want := execs.Load(), int64(1+2*n); got != want {
		t.Fatalf("upstream executions = %d; want %d, one per call", got, want)
	}
	perDirect := float64(g1-g0) / n
	perProxied := float64(g3-g2) / n
	goroutines := perProxied - perDirect
	bytes := (h3 - h2 - (h1 - h0)) / n
	t.Logf("per host session: %.1f goroutines and %d KB straight to the upstream, %.1f and %d KB through the proxy: the proxy adds %.1f goroutines and %d KB",
		perDirect, (h1-h0)/n>>10, perProxied, (h3-h2)/n>>10, goroutines, bytes>>10)
	if goroutines > maxGoroutinesPerSession+0.5 {
		t.Errorf("the proxy adds %.1f goroutines per idle host session; want at most %d", goroutines, maxGoroutinesPerSession)
	}
	if bytes > maxBytesPerSession {
		t.Errorf("the proxy adds %d bytes of live heap per idle host session; want at most %d", bytes, maxBytesPerSession)
	}
	// Released: what the sessions held goes with them. The upstream
	// connections they used stay pooled until idle (proxy.UpstreamTransport),
	// each with three goroutines in this process: the transport's read and
	// write loops and the in-process upstream's connection. Closing the
	// idle ones, as the proxy's idle release does, leaves nothing. The
	// sessions end in goroutines of their own after Close returns, and
	// hand their connections back to the pool as they end, so the idle
	// ones are closed again at each look while the count is waited for,
	// up to 10 s.
	closeIdle := proxy.UpstreamTransport.(interface{ CloseIdleConnections() }).CloseIdleConnections
	if left := fallsTo(g2+4, 10*time.Second, closeIdle) - g2; left > 4 {
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Errorf("%d goroutines left 10 s after the host sessions and the idle upstream connections closed; want at most 4; they are:\n%s", left, b.String())
	}
}

// fallsTo waits until at most limit goroutines run, or d has passed, and
// returns the count then; each look first runs release.
func fallsTo(limit int, d time.Duration, release func()) int {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		release()
		n := runtime.NumGoroutine()
		if n <= limit || time.Now().After(deadline) {
			return n
		}
		<-tick.C
	}
}

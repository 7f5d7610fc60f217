package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lossyProxy forwards HTTP to the payments server, but for the first drops
// tools/call requests of each key it lets the server answer and then
// replies 502 instead: the payment is made and the response is lost.
type lossyProxy struct {
	upstream *url.URL
	drops    int
	mu       sync.Mutex
	dropped  map[string]int // key -> responses lost so far
	lost     atomic.Int64
}

func (p *lossyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	key := ""
	if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
		key, _ = msg.Params.Meta[wire.MetaKey].(string)
	}
	if key != "" && p.take(key) {
		// Let the server run the call to its end, then lose the answer.
		out, err := http.DefaultTransport.RoundTrip(p.outbound(r, body))
		if err == nil {
			io.Copy(io.Discard, out.Body)
			out.Body.Close()
		}
		p.lost.Add(1)
		http.Error(w, "upstream response lost", http.StatusBadGateway)
		return
	}
	rp := httputil.NewSingleHostReverseProxy(p.upstream)
	rp.FlushInterval = -1 // stream SSE as it comes
	rp.ServeHTTP(w, r)
}

func (p *lossyProxy) take(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped[key] >= p.drops {
		return false
	}
	p.dropped[key]++
	return true
}

func (p *lossyProxy) outbound(r *http.Request, body []byte) *http.Request {
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = p.upstream.Host
	out.RequestURI = ""
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	return out
}

func TestClientWithLostResponsesMakesOnePaymentPerKey(t *testing.T) {
	dir := t.TempDir()
	upstream, err := url.Parse(startHTTP(t, nil, "-db", filepath.Join(dir, "p.db")))
	if err != nil {
		t.Fatal(err)
	}
	proxy := &lossyProxy{upstream: upstream, drops: 2, dropped: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "client.ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + upstream.Path}, nil)
	}
	c, err := client.Dial(ctx, connect, st, &client.Options{
		Confirmer: confirm.Static{Answer: confirm.Answer{Decision: ledger.DecisionApproved, By: "test"}},
		Retry:     &retry.Policy{MaxAttempts: 6, InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond, Multiplier: 2, MaxElapsed: -1},
	})
	if err != nil {
		t.Fatalf("client.Dial: %v", err)
	}
	defer c.Close()

	keys := []string{"inv-1", "inv-2", "inv-3"}
	for _, key := range keys {
		res, err := c.CallTool(client.WithKey(ctx, key), &mcp.CallToolParams{
			Name:      payments.ToolCreate,
			Arguments: map[string]any{"amount_cents": 500, "currency": "EUR", "payee": "frank"},
		})
		if err != nil || res.IsError {
			t.Fatalf("CallTool(%s) through lost responses = %v, %v; want the payment", key, res, err)
		}
	}
	if got, want := proxy.lost.Load(), int64(len(keys)*proxy.drops); got != want {
		t.Errorf("%d responses lost; want %d (the test lost none, so proves nothing)", got, want)
	}
	for _, key := range keys {
		c := waitCounts(t, dir, key, func(c payments.Counts) bool { return c.Applied >= 1 })
		if _, paid := countCmd(t, dir, key); paid != 1 || c.Applied != 1 {
			t.Errorf("key %s: %d payments, downstream %+v; want one payment applied once", key, paid, c)
		}
	}
}

package client_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcptest"
)

// BenchmarkCallToolBare is go-sdk's in-memory CallTool with no wrapper: the
// floor the wrapper is measured against.
func BenchmarkCallToolBare(b *testing.B) {
	srv := mcptest.New(nil)
	defer srv.Close()
	cs := srv.ConnectInMemory(context.Background(), b, nil)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		p := write(fmt.Sprint(i), 1)
		if _, err := cs.CallTool(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchClient(b *testing.B) *client.Client {
	return benchClientOn(b, &sqlite.Options{Synchronous: sqlite.SyncNormal}, nil)
}

// benchClientOn is a client over an in-memory mcptest server and a SQLite
// ledger opened with so; opts is added to the allow-all policy.
func benchClientOn(b *testing.B, so *sqlite.Options, opts *client.Options) *client.Client {
	srv := mcptest.New(nil)
	b.Cleanup(func() { srv.Close() })
	cs := srv.ConnectInMemory(context.Background(), b, nil)
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), so)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	o := client.Options{}
	if opts != nil {
		o = *opts
	}
	o.Policy = allow()
	return client.New(cs, st, &o)
}

// BenchmarkCallToolDurable is a new operation through the wrapper on the
// default, durable ledger (SQLite FULL, every transition on disk before
// it returns): the figure to set against BenchmarkCallToolBare plus
// sqlite's BenchmarkFsyncFloor.
func BenchmarkCallToolDurable(b *testing.B) {
	c := benchClientOn(b, nil, nil)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if _, err := c.CallTool(client.WithKey(ctx, fmt.Sprintf("k%d", i)), write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallToolDurableWriteBehind is BenchmarkCallToolDurable with
// the outcome written behind: the claim's fsync is the only one on the
// call's path.
func BenchmarkCallToolDurableWriteBehind(b *testing.B) {
	c := benchClientOn(b, nil, &client.Options{Durability: ledger.WriteBehind})
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if _, err := c.CallTool(client.WithKey(ctx, fmt.Sprintf("k%d", i)), write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// replayKeys is how many distinct finished keys BenchmarkCallToolReplayMany
// cycles through.
const replayKeys = 10_000

// BenchmarkCallToolReplayMany replays finished calls through CallTool, as a
// re-run agent does: each iteration is a different one of 10,000 keys,
// with a fresh arguments map, so nothing a single-key loop keeps hot
// (caches, branch history, one map entry) helps it. A run of fewer than
// 1,000 iterations (the first rounds of the ramp, -benchtime 1x in CI)
// finishes only as many keys as it replays: the 10,000 first calls are
// most of the package's benchmark time otherwise.
func BenchmarkCallToolReplayMany(b *testing.B) {
	keyCount := replayKeys
	if b.N < 1000 {
		keyCount = b.N
	}
	c := benchClient(b)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < keyCount; i += 16 {
				if _, err := c.CallTool(client.WithKey(ctx, fmt.Sprintf("k%d", i)), write(fmt.Sprint(i), 1)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	ctxs := make([]context.Context, keyCount)
	keys := make([]string, keyCount)
	ids := make([]string, keyCount)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
		ctxs[i] = client.WithKey(ctx, keys[i])
		ids[i] = fmt.Sprint(i)
	}
	runtime.GC() // the first calls' garbage is not the replays' cost
	b.ResetTimer()
	for i := range b.N {
		// A stride coprime with keyCount (7919 is prime, and keyCount
		// is under 1,000 or 10,000) visits every key in an order unlike
		// the order they were written in.
		j := (i * 7919) % keyCount
		o, err := c.Call(ctxs[j], write(ids[j], 1))
		if err != nil {
			b.Fatal(err)
		}
		if !o.Replayed || o.Key != keys[j] {
			b.Fatalf("Call(%s) = {Replayed: %v, Key: %q}; want a replay", keys[j], o.Replayed, o.Key)
		}
	}
}

// BenchmarkCallToolLedger is a new operation through the wrapper each time:
// claim, send, complete (SQLite in NORMAL mode).
func BenchmarkCallToolLedger(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := c.CallTool(client.WithKey(ctx, fmt.Sprintf("k%d", i)), write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallToolReplay is a duplicate answered from the ledger; it never
// reaches the server.
func BenchmarkCallToolReplay(b *testing.B) {
	c := benchClient(b)
	ctx := client.WithKey(context.Background(), "replayed")
	if _, err := c.CallTool(ctx, write("r", 1)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		o, err := c.Call(ctx, write("r", 1))
		if err != nil || !o.Replayed {
			b.Fatal(err)
		}
	}
}

// ledgerPart is the ledger's own part of one new operation: the claim and
// the completion the wrapper writes for call i of BenchmarkCallToolLedger
// (same session, owner, lease, retention, arguments, fingerprint and
// result size).
type ledgerPart struct {
	st     *sqlite.Store
	owner  string
	result []byte
}

func newLedgerPart(b *testing.B) *ledgerPart {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return &ledgerPart{st: st, owner: "host:12345:0123abcd",
		result: []byte(`{"content":[{"type":"text","text":"wrote 1234 amount 1 (execution 1 of key \"k1234\")"}],"structuredContent":{"amount":1,"execution":1,"id":"1234","key":"k1234"}}`)}
}

func (l *ledgerPart) claim(b *testing.B, ctx context.Context, i int) ledger.ID {
	doc := fmt.Appendf(nil, `{"amount":1,"id":"%d"}`, i)
	fp, err := args.Fingerprint(doc)
	if err != nil {
		b.Fatal(err)
	}
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: fmt.Sprintf("k%d", i)}
	if _, err := l.st.Claim(ctx, ledger.ClaimRequest{
		ID: id, Session: "s-0123456789abcdef", Fingerprint: fp, Arguments: doc,
		Owner: l.owner, Lease: ledger.DefaultLease, Retention: 24 * time.Hour,
	}); err != nil {
		b.Fatal(err)
	}
	return id
}

func (l *ledgerPart) complete(b *testing.B, ctx context.Context, id ledger.ID) {
	if _, err := l.st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: l.owner, Fence: 1, Result: l.result, AddAttempts: 1}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStoreClaimComplete is the ledger's own part of a new operation
// (claim, then SUCCEEDED with the call's result) on the same store
// settings as BenchmarkCallToolLedger.
func BenchmarkStoreClaimComplete(b *testing.B) {
	l := newLedgerPart(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		l.complete(b, ctx, l.claim(b, ctx, i))
	}
}

// BenchmarkCallToolByHand is the bare call between the ledger's own claim
// and completion, written out by hand: the floor of any wrapper over this
// ledger, measured in one loop so that the store's and the session's costs
// meet as they do in BenchmarkCallToolLedger. What the wrapper adds beyond
// it is the wrapper's own cost.
func BenchmarkCallToolByHand(b *testing.B) {
	srv := mcptest.New(nil)
	defer srv.Close()
	cs := srv.ConnectInMemory(context.Background(), b, nil)
	l := newLedgerPart(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		id := l.claim(b, ctx, i)
		p := write(fmt.Sprint(i), 1)
		p.Meta = mcp.Meta{client.MetaKey: id.Key}
		if _, err := cs.CallTool(ctx, p); err != nil {
			b.Fatal(err)
		}
		l.complete(b, ctx, id)
	}
}

// BenchmarkWrapperOverhead interleaves four things in one loop, each on
// its own store and session so that all four meet the same machine state:
// a new operation through the wrapper, the same work by hand (claim, bare
// call with the key in _meta, complete), the bare call alone and the
// ledger's part alone. Besides each one's time per operation it reports
// the wrapper's cost beyond the bare call and the ledger's part
// (beyond-ns/op: wrapper − bare − store) and beyond the same work by hand
// (own-ns/op: wrapper − by hand).
func BenchmarkWrapperOverhead(b *testing.B) {
	ctx := context.Background()
	c := benchClient(b)
	srv := mcptest.New(nil)
	b.Cleanup(func() { srv.Close() })
	byHandSession := srv.ConnectInMemory(ctx, b, nil)
	bareSession := srv.ConnectInMemory(ctx, b, nil)
	byHand, alone := newLedgerPart(b), newLedgerPart(b)
	var wrapped, manual, bare, store time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := c.CallTool(client.WithKey(ctx, fmt.Sprintf("k%d", i)), write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		id := byHand.claim(b, ctx, i)
		p := write(fmt.Sprint(i), 1)
		p.Meta = mcp.Meta{client.MetaKey: id.Key}
		if _, err := byHandSession.CallTool(ctx, p); err != nil {
			b.Fatal(err)
		}
		byHand.complete(b, ctx, id)
		t2 := time.Now()
		if _, err := bareSession.CallTool(ctx, write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		alone.complete(b, ctx, alone.claim(b, ctx, i))
		t4 := time.Now()
		wrapped += t1.Sub(t0)
		manual += t2.Sub(t1)
		bare += t3.Sub(t2)
		store += t4.Sub(t3)
	}
	n := float64(b.N)
	b.ReportMetric(float64(wrapped)/n, "wrapper-ns/op")
	b.ReportMetric(float64(manual)/n, "byhand-ns/op")
	b.ReportMetric(float64(bare)/n, "bare-ns/op")
	b.ReportMetric(float64(store)/n, "store-ns/op")
	b.ReportMetric(float64(wrapped-bare-store)/n, "beyond-ns/op")
	b.ReportMetric(float64(wrapped-manual)/n, "own-ns/op")
}

// BenchmarkMiddlewareOverhead interleaves three ways of making the same
// new operation in one loop, each on its own session (and ledger), so all
// three meet the same machine state: a bare go-sdk session.CallTool, the
// wrapper's CallTool, and session.CallTool on a client with the ledger
// middleware. It reports each one's time per operation and the ratios
// middleware/bare and middleware/wrapper.
func BenchmarkMiddlewareOverhead(b *testing.B) {
	ctx := context.Background()
	srv := mcptest.New(nil)
	b.Cleanup(func() { srv.Close() })
	bareSession := srv.ConnectInMemory(ctx, b, nil)
	wrapper := benchClient(b)
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	mw := client.NewMiddleware(st, &client.Options{Policy: allow()})
	b.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap)
	protected, err := mc.Connect(ctx, srv.ClientTransport(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { protected.Close() })
	var bare, wrapped, middle time.Duration
	b.ResetTimer()
	for i := range b.N {
		key := client.WithKey(ctx, fmt.Sprintf("k%d", i))
		t0 := time.Now()
		if _, err := bareSession.CallTool(ctx, write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := wrapper.CallTool(key, write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := protected.CallTool(key, write(fmt.Sprint(i), 1)); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		bare += t1.Sub(t0)
		wrapped += t2.Sub(t1)
		middle += t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(bare)/n, "bare-ns/op")
	b.ReportMetric(float64(wrapped)/n, "wrapper-ns/op")
	b.ReportMetric(float64(middle)/n, "middleware-ns/op")
	b.ReportMetric(float64(middle)/float64(bare), "middleware/bare")
	b.ReportMetric(float64(middle)/float64(wrapped), "middleware/wrapper")
}

// BenchmarkMiddlewareReplay is a duplicate answered from the ledger
// through the middleware, interleaved with the same replay through the
// wrapper; neither reaches the server.
func BenchmarkMiddlewareReplay(b *testing.B) {
	ctx := client.WithKey(context.Background(), "replayed")
	srv := mcptest.New(nil)
	b.Cleanup(func() { srv.Close() })
	wrapper := benchClient(b)
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	mw := client.NewMiddleware(st, &client.Options{Policy: allow()})
	b.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap)
	protected, err := mc.Connect(ctx, srv.ClientTransport(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { protected.Close() })
	if _, err := wrapper.CallTool(ctx, write("r", 1)); err != nil {
		b.Fatal(err)
	}
	if _, err := protected.CallTool(ctx, write("r", 1)); err != nil {
		b.Fatal(err)
	}
	var wrapped, middle time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := wrapper.CallTool(ctx, write("r", 1)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		res, err := protected.CallTool(ctx, write("r", 1))
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := res.Meta[client.MetaReplay]; !ok {
			b.Fatal("the middleware's answer is no replay")
		}
		t2 := time.Now()
		wrapped += t1.Sub(t0)
		middle += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(wrapped)/n, "wrapper-ns/op")
	b.ReportMetric(float64(middle)/n, "middleware-ns/op")
	b.ReportMetric(float64(middle)/float64(wrapped), "middleware/wrapper")
}

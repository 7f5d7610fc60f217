package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// gather holds every flight of b while start(0..n-1), each of which sends
// one write through b, queue their writes; then it runs between (when not
// nil) and ends the last flight, which sends what is queued. It returns
// how many writes went out in batches (of two or more), and the errors of
// batches that failed.
func gather(t *testing.T, b *batcher, n int, start func(i int), between func()) (int, []error) {
	t.Helper()
	if n > maxBatch {
		t.Fatalf("gather(%d): a batch holds at most %d", n, maxBatch)
	}
	var queued sync.WaitGroup
	queued.Add(n)
	var sent atomic.Int64
	b.mu.Lock()
	if b.inflight != 0 {
		b.mu.Unlock()
		t.Fatalf("batcher has %d flights already", b.inflight)
	}
	b.inflight = b.flights
	b.queued = queued.Done
	prevSend := b.beforeSend
	b.beforeSend = func(ws []*write) {
		sent.Add(int64(len(ws)))
		if prevSend != nil {
			prevSend(ws)
		}
	}
	var (
		failedMu sync.Mutex
		failed   []error
	)
	b.afterSend = func(_ []*write, err error) {
		if err != nil {
			failedMu.Lock()
			failed = append(failed, err)
			failedMu.Unlock()
		}
	}
	b.mu.Unlock()
	var done sync.WaitGroup
	for i := range n {
		done.Go(func() { start(i) })
	}
	queued.Wait()
	if between != nil {
		between()
	}
	// The flights held end with nothing to send but the last, which sends
	// the queue.
	b.mu.Lock()
	b.inflight = 1
	b.mu.Unlock()
	b.next()
	done.Wait()
	b.mu.Lock()
	b.queued, b.beforeSend, b.afterSend = nil, prevSend, nil
	b.mu.Unlock()
	failedMu.Lock()
	defer failedMu.Unlock()
	return int(sent.Load()), failed
}

// inOneBatch is gather that fails t unless all n writes went out as one
// batch, and that batch committed.
func inOneBatch(t *testing.T, b *batcher, n int, start func(i int)) {
	t.Helper()
	got, failed := gather(t, b, n, start, nil)
	if got != n {
		t.Fatalf("batches sent %d writes; want all %d in one batch", got, n)
	}
	if len(failed) > 0 {
		t.Fatalf("the batch failed: %v", failed)
	}
}

func claimReq(key, fp string) ledger.ClaimRequest {
	return ledger.ClaimRequest{ID: ledger.ID{Tenant: "t", Tool: "create_payment", Key: key}, Fingerprint: fp,
		Owner: "w", Arguments: json.RawMessage(`{"amount":42}`)}
}

// Many callers claiming the same keys in one batch: exactly one winner per
// key, every other caller a follower of that winner's record.
func TestBatchClaimsOneWinnerPerKey(t *testing.T) {
	st := openT(t, pgtest.Schema(t), nil)
	const keys, perKey = 8, 8
	var wins, follows [keys]atomic.Int64
	var fails atomic.Int64
	inOneBatch(t, st.claims, keys*perKey, func(i int) {
		k := i % keys
		c, err := st.Claim(context.Background(), claimReq(fmt.Sprintf("k-%d", k), "fp"))
		switch {
		case err != nil:
			fails.Add(1)
			t.Errorf("Claim(k-%d) = %v", k, err)
		case c.Won:
			wins[k].Add(1)
		case c.Record.State == ledger.StateProcessing && c.Record.Fence == 1:
			follows[k].Add(1)
		default:
			t.Errorf("Claim(k-%d) followed a record %s at fence %d; want PROCESSING at fence 1", k, c.Record.State, c.Record.Fence)
		}
	})
	for k := range keys {
		if w, f := wins[k].Load(), follows[k].Load(); w != 1 || f != perKey-1 {
			t.Errorf("key k-%d: %d winners, %d followers; want 1 and %d", k, w, f, perKey-1)
		}
	}
}

// Without any forcing: 64 goroutines on two Stores of one schema (as two
// processes would be) claiming 16 keys, 4 rounds, over pools that batch
// whatever overlaps. Exactly one winner per key.
func TestBatchClaimsConcurrent(t *testing.T) {
	url := pgtest.Schema(t)
	stores := []*Store{openT(t, url, nil), openT(t, url, nil)}
	const keys, rounds = 16, 4
	var sent atomic.Int64
	for _, st := range stores {
		st.claims.beforeSend = func(ws []*write) { sent.Add(int64(len(ws))) }
	}
	var wins [rounds][keys]atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		st := stores[g%2]
		wg.Go(func() {
			for r := range rounds {
				k := (g + r) % keys
				c, err := st.Claim(context.Background(), claimReq(fmt.Sprintf("r%d-k%d", r, k), "fp"))
				if err != nil {
					t.Errorf("Claim(r%d-k%d) = %v", r, k, err)
					return
				}
				if c.Won {
					wins[r][k].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for r := range rounds {
		for k := range keys {
			if n := wins[r][k].Load(); n != 1 {
				t.Errorf("key r%d-k%d had %d winners; want exactly 1", r, k, n)
			}
		}
	}
	t.Logf("%d of %d claims went out in batches", sent.Load(), 64*rounds)
}

// One member's conflict, reused key or refused bytes never fails or
// changes another's outcome.
func TestBatchClaimConflictsStayApart(t *testing.T) {
	st := openT(t, pgtest.Schema(t), nil)
	ctx := context.Background()
	for _, key := range []string{"taken", "reused"} {
		if c, err := st.Claim(ctx, claimReq(key, "fp")); err != nil || !c.Won {
			t.Fatalf("Claim(%q) = {Won: %v}, %v; want a won claim", key, c.Won, err)
		}
	}
	// A RETRYABLE record of the same operation is taken over.
	retry, err := st.Claim(ctx, claimReq("retry", "fp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: retry.Record.ID, From: ledger.StateProcessing,
		To: ledger.StateRetryable, Owner: "w", Fence: retry.Record.Fence}); err != nil {
		t.Fatal(err)
	}
	bad := claimReq("bad", "fp")
	bad.Session = "\xff" // not UTF-8: the server refuses the statement
	noArgs := claimReq("new-2", "fp")
	noArgs.Arguments = nil
	reqs := []ledger.ClaimRequest{claimReq("new-1", "fp"), claimReq("taken", "fp"), claimReq("reused", "other"),
		claimReq("retry", "fp"), bad, noArgs}
	got := make([]ledger.Claim, len(reqs))
	errs := make([]error, len(reqs))
	sent, failed := gather(t, st.claims, len(reqs), func(i int) { got[i], errs[i] = st.Claim(ctx, reqs[i]) }, nil)
	// The refused bytes fail the shared statement: every member then ran
	// on its own.
	if sent != len(reqs) || len(failed) != 1 {
		t.Fatalf("batches sent %d claims, %d failed (%v); want one batch of %d that failed", sent, len(failed), failed, len(reqs))
	}

	for i, want := range []struct {
		won   bool
		fence int64
		err   error
	}{{true, 1, nil}, {false, 1, nil}, {false, 1, ledger.ErrKeyReused}, {true, 2, nil}, {false, 0, errAny}, {true, 1, nil}} {
		key := reqs[i].Key
		switch {
		case want.err == errAny:
			if errs[i] == nil {
				t.Errorf("Claim(%q) with a session the server refuses = nil error; want one", key)
			}
			continue
		case !errors.Is(errs[i], want.err) || (want.err == nil && errs[i] != nil):
			t.Errorf("Claim(%q) error = %v; want %v", key, errs[i], want.err)
			continue
		}
		if got[i].Won != want.won || got[i].Record.Fence != want.fence {
			t.Errorf("Claim(%q) = {Won: %v, Fence: %d}; want {Won: %v, Fence: %d}", key, got[i].Won, got[i].Record.Fence, want.won, want.fence)
		}
	}
	if _, err := st.Get(ctx, bad.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(bad) = %v; want ErrNotFound", err)
	}
	// A winner's record, built from what its claim sent, is the record a
	// read returns.
	for _, i := range []int{0, 5} {
		rec, err := st.Get(ctx, reqs[i].ID)
		if err != nil || !reflect.DeepEqual(rec, got[i].Record) {
			t.Errorf("Get(%q) = %+v, %v; want the record the claim returned, %+v", reqs[i].Key, rec, err, got[i].Record)
		}
	}
}

// errAny stands for "some error" in a table of wanted errors.
var errAny = errors.New("any error")

// A stale fence or a foreign owner in a batch of completions loses only its
// own compare-and-set; in both durabilities.
func TestBatchTransitionFencesStayApart(t *testing.T) {
	for _, d := range []ledger.Durability{ledger.Durable, ledger.WriteBehind} {
		t.Run(fmt.Sprint("durability-", d), func(t *testing.T) {
			st := openT(t, pgtest.Schema(t), nil)
			ctx := ledger.WithDurability(context.Background(), d)
			b := st.transitions
			if d == ledger.WriteBehind {
				b = st.behind
			}
			const n = 6
			ts := make([]ledger.Transition, n)
			for i := range ts {
				c, err := st.Claim(ctx, claimReq(fmt.Sprintf("k-%d", i), "fp"))
				if err != nil || !c.Won {
					t.Fatalf("Claim = {Won: %v}, %v", c.Won, err)
				}
				ts[i] = ledger.Transition{ID: c.Record.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
					Owner: "w", Fence: c.Record.Fence, Result: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), AddAttempts: 1}
			}
			ts[1].Fence++           // stale (here: from the future) fence
			ts[4].Owner = "someone" // not the lease holder
			errs := make([]error, n)
			recs := make([]*ledger.Record, n)
			inOneBatch(t, b, n, func(i int) { recs[i], errs[i] = st.Transition(ctx, ts[i]) })
			for i, tr := range ts {
				cur, err := st.Get(context.Background(), tr.ID)
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 || i == 4 {
					if !errors.Is(errs[i], ledger.ErrLeaseLost) || cur.State != ledger.StateProcessing {
						t.Errorf("Transition(%s) = %v, record %s; want ErrLeaseLost and PROCESSING", tr.Key, errs[i], cur.State)
					}
					continue
				}
				if errs[i] != nil || recs[i].State != ledger.StateSucceeded || cur.State != ledger.StateSucceeded ||
					string(cur.Result) != string(tr.Result) || cur.Attempts != 1 {
					t.Errorf("Transition(%s) = %v; stored %s result %s attempts %d; want SUCCEEDED with %s after 1 attempt",
						tr.Key, errs[i], cur.State, cur.Result, cur.Attempts, tr.Result)
				}
			}
		})
	}
}

// A caller that gives up, before its write is sent or while it is in
// flight, returns at once with its context's error; the rest of the batch
// goes on.
func TestBatchCancelledCaller(t *testing.T) {
	st := openT(t, pgtest.Schema(t), nil)
	const n = 5
	ctxs := make([]context.Context, n)
	cancels := make([]context.CancelFunc, n)
	for i := range ctxs {
		ctxs[i], cancels[i] = context.WithCancel(context.Background())
		defer cancels[i]()
	}
	// Caller 1 gives up while queued, so its claim is never sent; caller 3
	// once the batch holds its claim.
	st.claims.beforeSend = func([]*write) { cancels[3]() }
	errs := make([]error, n)
	got := make([]ledger.Claim, n)
	returned1 := make(chan struct{})
	sent, failed := gather(t, st.claims, n, func(i int) {
		got[i], errs[i] = st.Claim(ctxs[i], claimReq(fmt.Sprintf("k-%d", i), "fp"))
		if i == 1 {
			close(returned1)
		}
	}, func() {
		cancels[1]()
		<-returned1
	})
	if sent != n-1 || len(failed) > 0 {
		t.Errorf("batches sent %d claims, failed: %v; want %d (all but the one given up in the queue) and no failure", sent, failed, n-1)
	}
	for i := range n {
		switch i {
		case 1, 3:
			if !errors.Is(errs[i], context.Canceled) {
				t.Errorf("Claim(k-%d) of a caller that gave up = %v; want context.Canceled", i, errs[i])
			}
		default:
			if errs[i] != nil || !got[i].Won {
				t.Errorf("Claim(k-%d) = {Won: %v}, %v; want a won claim", i, got[i].Won, errs[i])
			}
		}
	}
	if _, err := st.Get(context.Background(), ledger.ID{Tenant: "t", Tool: "create_payment", Key: "k-1"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(k-1) after its caller gave up in the queue = %v; want ErrNotFound", err)
	}
}

// A claim won in a batch returns the record a read returns, whatever its
// request leaves empty.
func TestBatchClaimRecordsReadBack(t *testing.T) {
	st := openT(t, pgtest.Schema(t), nil)
	ctx := context.Background()
	reqs := []ledger.ClaimRequest{claimReq("plain", "fp"), claimReq("no-args", "fp"), claimReq("traced", "fp2"),
		claimReq("approval", "fp3")}
	reqs[1].Arguments = nil
	reqs[2].TraceID, reqs[2].SpanID, reqs[2].Session = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "s-1"
	reqs[2].Lease, reqs[2].Retention = time.Minute, time.Hour
	reqs[3].NeedsApproval, reqs[3].ReusePolicy = true, ledger.Verify
	got := make([]ledger.Claim, len(reqs))
	errs := make([]error, len(reqs))
	inOneBatch(t, st.claims, len(reqs), func(i int) { got[i], errs[i] = st.Claim(ctx, reqs[i]) })
	for i, req := range reqs {
		if errs[i] != nil || !got[i].Won {
			t.Errorf("Claim(%q) = {Won: %v}, %v; want a won claim", req.Key, got[i].Won, errs[i])
			continue
		}
		rec, err := st.Get(ctx, req.ID)
		if err != nil || !reflect.DeepEqual(rec, got[i].Record) {
			t.Errorf("Get(%q) = %+v, %v; want the record the claim returned, %+v", req.Key, rec, err, got[i].Record)
		}
	}
}

// Transitions of several shapes in one batch, two of them for the same
// record: each returns the record a read returns, and of the two for one
// record exactly one wins, as if they ran one after the other.
func TestBatchTransitionShapes(t *testing.T) {
	st := openT(t, pgtest.Schema(t), nil)
	ctx := context.Background()
	claim := func(key string, approval bool) ledger.Claim {
		req := claimReq(key, "fp")
		req.NeedsApproval = approval
		c, err := st.Claim(ctx, req)
		if err != nil || !c.Won {
			t.Fatalf("Claim(%q) = {Won: %v}, %v", key, c.Won, err)
		}
		return c
	}
	done, failed, pending, lost, twice := claim("done", false), claim("failed", false), claim("pending", true),
		claim("lost", false), claim("twice", false)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ts := []ledger.Transition{
		{ID: done.Record.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1,
			Result: json.RawMessage(`{"ok":true}`), AddAttempts: 1},
		{ID: failed.Record.ID, From: ledger.StateProcessing, To: ledger.StateFailed, Owner: "w", Fence: 1,
			Result: json.RawMessage(`{"isError":true}`), ErrorKind: "tool_error", ErrorMessage: "card declined", AddAttempts: 1},
		{ID: pending.Record.ID, From: ledger.StatePendingApproval, To: ledger.StateProcessing, Owner: "w", Fence: 1,
			Approval: &ledger.Approval{Decision: "approved", By: "ana", At: at, Reason: "looks right \u00e9"}},
		{ID: lost.Record.ID, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "w", Fence: 1,
			ErrorKind: "lost", ErrorMessage: "the connection dropped"},
		{ID: twice.Record.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1,
			Result: json.RawMessage(`{"n":1}`), AddAttempts: 1},
		{ID: twice.Record.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1,
			Result: json.RawMessage(`{"n":2}`), AddAttempts: 1},
	}
	recs := make([]*ledger.Record, len(ts))
	errs := make([]error, len(ts))
	inOneBatch(t, st.transitions, len(ts), func(i int) { recs[i], errs[i] = st.Transition(ctx, ts[i]) })
	for i, tr := range ts[:4] {
		cur, err := st.Get(ctx, tr.ID)
		if errs[i] != nil || err != nil || !reflect.DeepEqual(recs[i], cur) {
			t.Errorf("Transition(%s %s -> %s) = %+v, %v; want the record a read returns, %+v (%v)", tr.Key, tr.From, tr.To, recs[i], errs[i], cur, err)
		}
	}
	cur, err := st.Get(ctx, twice.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	wins := 0
	for i := 4; i < 6; i++ {
		switch {
		case errs[i] == nil && reflect.DeepEqual(recs[i], cur) && string(cur.Result) == string(ts[i].Result):
			wins++
		case errors.Is(errs[i], ledger.ErrLeaseLost):
		default:
			t.Errorf("Transition(twice, %s) = %v; want the record or ErrLeaseLost", ts[i].Result, errs[i])
		}
	}
	if wins != 1 || cur.Attempts != 1 {
		t.Errorf("two transitions of one record: %d won, attempts %d; want exactly 1 and 1", wins, cur.Attempts)
	}
}

// One (tenant, tool, key) in several layers within one batch: the merged
// insert and the merged update hold each layer's record once and give each
// caller its own layer's outcome.
func TestBatchLayersStayApart(t *testing.T) {
	for _, d := range []ledger.Durability{ledger.Durable, ledger.WriteBehind} {
		t.Run(fmt.Sprint("durability-", d), func(t *testing.T) {
			st := openT(t, pgtest.Schema(t), nil)
			ctx := ledger.WithDurability(context.Background(), d)
			layers := []string{"", ledger.LayerClient, ledger.LayerProxy, ledger.LayerServer}
			const perLayer = 3
			var wins [4]atomic.Int64
			claims := make([]ledger.Claim, len(layers))
			var mu sync.Mutex // guards claims
			inOneBatch(t, st.claims, len(layers)*perLayer, func(i int) {
				req := claimReq("shared", "fp-"+layers[i%len(layers)])
				req.Layer = layers[i%len(layers)]
				c, err := st.Claim(ctx, req)
				switch {
				case err != nil:
					t.Errorf("Claim(layer %q) = %v", req.Layer, err)
				case c.Record.Layer != req.Layer || c.Record.Fence != 1 || c.Record.Fingerprint != req.Fingerprint:
					t.Errorf("Claim(layer %q) = record of layer %q at fence %d with %s; want its own layer's, at fence 1", req.Layer, c.Record.Layer, c.Record.Fence, c.Record.Fingerprint)
				case c.Won:
					wins[i%len(layers)].Add(1)
					mu.Lock()
					claims[i%len(layers)] = c
					mu.Unlock()
				}
			})
			for i, l := range layers {
				if n := wins[i].Load(); n != 1 {
					t.Fatalf("layer %q: %d winners; want 1", l, n)
				}
			}
			b := st.transitions
			if d == ledger.WriteBehind {
				b = st.behind
			}
			ts := make([]ledger.Transition, len(layers))
			for i, c := range claims {
				ts[i] = ledger.Transition{ID: c.Record.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
					Owner: "w", Fence: 1, Result: json.RawMessage(fmt.Sprintf(`{"layer":%q}`, layers[i])), AddAttempts: 1}
			}
			ts[2].Fence = 2 // stale in the proxy layer alone
			errs := make([]error, len(ts))
			inOneBatch(t, b, len(ts), func(i int) { _, errs[i] = st.Transition(ctx, ts[i]) })
			for i, tr := range ts {
				cur, err := st.Get(context.Background(), tr.ID)
				if err != nil {
					t.Fatal(err)
				}
				if i == 2 {
					if !errors.Is(errs[i], ledger.ErrLeaseLost) || cur.State != ledger.StateProcessing {
						t.Errorf("Transition(layer %q) with a stale fence = %v, record %s; want ErrLeaseLost and PROCESSING", tr.Layer, errs[i], cur.State)
					}
					continue
				}
				if errs[i] != nil || cur.State != ledger.StateSucceeded || string(cur.Result) != string(tr.Result) {
					t.Errorf("Transition(layer %q) = %v; stored %s with %s; want SUCCEEDED with %s", tr.Layer, errs[i], cur.State, cur.Result, tr.Result)
				}
			}
		})
	}
}

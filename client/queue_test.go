package client_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/process"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcptest"
)

// queueWrite queues the write tool for a person; the rest runs.
func queueWrite(opts ...func(*confirm.Policy)) *confirm.Policy {
	p := &confirm.Policy{Rules: []confirm.Rule{{Tool: "write", Action: confirm.Queue}, {Tool: "*", Action: confirm.Allow}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ledgers are the two stores, each opened twice on the same data: the
// requester's process and the approver's.
type ledgerPair struct {
	name string
	open func(t *testing.T, now func() time.Time) (caller, approver ledger.Store)
}

var ledgers = []ledgerPair{
	{name: "sqlite", open: func(t *testing.T, now func() time.Time) (ledger.Store, ledger.Store) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		open := func() ledger.Store {
			st, err := sqlite.Open(context.Background(), path, &sqlite.Options{Now: now})
			if err != nil {
				t.Fatalf("sqlite.Open = %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		return open(), open()
	}},
	{name: "postgres", open: func(t *testing.T, now func() time.Time) (ledger.Store, ledger.Store) {
		url := pgtest.Schema(t)
		open := func() ledger.Store {
			st, err := postgres.Open(context.Background(), url, &postgres.Options{Now: now})
			if err != nil {
				t.Fatalf("postgres.Open = %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		return open(), open()
	}},
}

type queueFixture struct {
	srv      *mcptest.Server
	caller   ledger.Store
	approver ledger.Store
	clock    *ledgertest.Clock
	c        *client.Client
}

func newQueueFixture(t *testing.T, lp ledgerPair, opts *client.Options) *queueFixture {
	t.Helper()
	f := &queueFixture{srv: mcptest.New(nil), clock: ledgertest.NewClock(time.Now().UTC().Truncate(time.Microsecond))}
	t.Cleanup(func() { f.srv.Close() })
	f.caller, f.approver = lp.open(t, f.clock.Now)
	f.c = f.client(t, opts)
	return f
}

// client is another client (another agent process) on the same server and
// ledger.
func (f *queueFixture) client(t *testing.T, opts *client.Options) *client.Client {
	t.Helper()
	o := *opts
	o.Retry, o.Now = fastRetry(), f.clock.Now
	if o.Requester == "" {
		o.Requester = "alice"
	}
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, f.srv.ClientTransport(t), nil)
	}
	c, err := client.Dial(context.Background(), connect, f.caller, &o)
	if err != nil {
		t.Fatalf("client.Dial = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// queued makes the first call and checks that it returns queued, without
// waiting for an approval: none is given, and the clock does not move, so a
// call that waited would end only in the guard's deadline.
func (f *queueFixture) queued(t *testing.T, ctx context.Context, p *mcp.CallToolParams) *client.Error {
	t.Helper()
	guard, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := f.c.Call(guard, p)
	if guard.Err() != nil {
		t.Fatalf("queued call = %v after a minute; want an answer without an approval", err)
	}
	ce, ok := errs.AsType[*client.Error](err)
	if !errors.Is(err, client.ErrAwaitingApproval) || !ok || ce.Key == "" || ce.State != ledger.StatePendingApproval {
		t.Fatalf("Call = %v; want ErrAwaitingApproval with the key, PENDING_APPROVAL", err)
	}
	if !strings.Contains(ce.Text, ce.Key) {
		t.Errorf("model text %q does not name the key %s", ce.Text, ce.Key)
	}
	if n := f.srv.TotalExecutions(); n != 0 {
		t.Fatalf("TotalExecutions = %d after queueing; want 0", n)
	}
	return ce
}

func (f *queueFixture) decide(t *testing.T, key string, d client.Decision) *ledger.Record {
	t.Helper()
	d.Now = f.clock.Now
	r, err := client.Decide(context.Background(), f.approver, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: key}, d)
	if err != nil {
		t.Fatalf("Decide(%s) = %v", key, err)
	}
	return r
}

func eachLedger(t *testing.T, fn func(t *testing.T, lp ledgerPair)) {
	for _, lp := range ledgers {
		t.Run(lp.name, func(t *testing.T) { fn(t, lp) })
	}
}

func TestQueuedApprovalRunsOnceForConcurrentCallers(t *testing.T) {
	eachLedger(t, func(t *testing.T, lp ledgerPair) {
		f := newQueueFixture(t, lp, &client.Options{Policy: queueWrite()})
		ctx := client.WithKey(context.Background(), "order-1")
		ce := f.queued(t, ctx, write("a", 12))
		rec, err := f.approver.Get(ctx, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: ce.Key})
		if err != nil {
			t.Fatal(err)
		}
		if q, ok := client.QueuedCall(rec); !ok || q.Requester != "alice" || q.Approved || process.Gone(rec.Owner) {
			t.Fatalf("queued record owner %q = %+v, %v; want a queue owner requested by alice that no process exit ends", rec.Owner, q, ok)
		}
		if want := f.clock.Now().Add(confirm.DefaultApprovalExpiry); !rec.LeaseUntil.Equal(want) {
			t.Errorf("queued lease until %v; want the approval's expiry %v", rec.LeaseUntil, want)
		}
		// Still waiting: a repeat answers at once, nothing runs.
		if _, err := f.c.Call(ctx, write("a", 12)); !errors.Is(err, client.ErrAwaitingApproval) {
			t.Fatalf("repeat before approval = %v; want ErrAwaitingApproval", err)
		}
		ap := f.decide(t, ce.Key, client.Decision{Approve: true, By: "bob", Reason: "checked"})
		if ap.State != ledger.StatePendingApproval || ap.Approval.Fingerprint != rec.Fingerprint || ap.Approval.PolicyVersion != queueWrite().Version() ||
			!ap.Approval.Expires.Equal(rec.LeaseUntil) || ap.Fence != rec.Fence+1 {
			t.Fatalf("approved record = %+v approval %+v; want PENDING_APPROVAL bound to the fingerprint, policy and expiry, fence+1", ap, ap.Approval)
		}
		// Eight agents (two processes) race for the approved call.
		other := f.client(t, &client.Options{Policy: queueWrite()})
		var wg sync.WaitGroup
		var ok, failed atomic.Int32
		for i := range 8 {
			c := f.c
			if i%2 == 1 {
				c = other
			}
			wg.Go(func() {
				out, err := c.Call(ctx, write("a", 12))
				if err != nil || out.Result == nil || out.Result.IsError {
					failed.Add(1)
					t.Errorf("caller %d: Call = %v, %v; want the result", i, out, err)
					return
				}
				ok.Add(1)
			})
		}
		wg.Wait()
		if n := f.srv.TotalExecutions(); n != 1 {
			t.Fatalf("TotalExecutions = %d after the approval; want exactly 1", n)
		}
		if ok.Load() != 8 {
			t.Errorf("%d callers got the result; want 8", ok.Load())
		}
		done := record(t, f.caller, "write", ce.Key)
		if done.State != ledger.StateSucceeded || done.Approval == nil || done.Approval.By != "bob" || done.Fence != ap.Fence+1 {
			t.Errorf("record = %s fence %d approval %+v; want SUCCEEDED, fence %d, bob's approval", done.State, done.Fence, done.Approval, ap.Fence+1)
		}
		// The approval was used: it cannot be given again, or used again.
		if _, err := client.Decide(ctx, f.approver, done.ID, client.Decision{Approve: true, By: "bob"}); !errors.Is(err, client.ErrNotQueued) {
			t.Errorf("Decide on the consumed call = %v; want ErrNotQueued", err)
		}
	})
}

func TestQueuedDenial(t *testing.T) {
	eachLedger(t, func(t *testing.T, lp ledgerPair) {
		f := newQueueFixture(t, lp, &client.Options{Policy: queueWrite()})
		ctx := client.WithKey(context.Background(), "order-2")
		ce := f.queued(t, ctx, write("a", 1))
		if _, err := client.Decide(ctx, f.approver, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: ce.Key}, client.Decision{By: "bob"}); err == nil {
			t.Fatalf("Decide(deny without a reason) = nil; want an error")
		}
		r := f.decide(t, ce.Key, client.Decision{By: "bob", Reason: "not this month"})
		if r.State != ledger.StateDenied || r.Approval.Decision != ledger.DecisionDenied {
			t.Fatalf("denied record = %s %+v; want DENIED", r.State, r.Approval)
		}
		_, err := f.c.Call(ctx, write("a", 1))
		if !errors.Is(err, client.ErrDenied) {
			t.Fatalf("re-run after the denial = %v; want ErrDenied", err)
		}
		if ce, _ := errs.AsType[*client.Error](err); ce == nil || !strings.Contains(ce.Text, "not this month") {
			t.Errorf("model text %v does not give the reason", err)
		}
		if n := f.srv.TotalExecutions(); n != 0 {
			t.Fatalf("TotalExecutions = %d; want 0", n)
		}
	})
}

func TestQueuedApprovalIsBound(t *testing.T) {
	lp := ledgers[0]
	t.Run("other arguments", func(t *testing.T) {
		f := newQueueFixture(t, lp, &client.Options{Policy: queueWrite()})
		ctx := client.WithKey(context.Background(), "order-3")
		ce := f.queued(t, ctx, write("a", 1))
		f.decide(t, ce.Key, client.Decision{Approve: true, By: "bob"})
		if _, err := f.c.Call(ctx, write("a", 1000)); !errors.Is(err, ledger.ErrKeyReused) {
			t.Fatalf("approved key with other arguments = %v; want ErrKeyReused", err)
		}
		if n := f.srv.TotalExecutions(); n != 0 {
			t.Fatalf("TotalExecutions = %d; want 0: the approval covers only the approved arguments", n)
		}
	})
	t.Run("changed policy", func(t *testing.T) {
		f := newQueueFixture(t, lp, &client.Options{Policy: queueWrite()})
		ctx := client.WithKey(context.Background(), "order-4")
		ce := f.queued(t, ctx, write("a", 1))
		f.decide(t, ce.Key, client.Decision{Approve: true, By: "bob"})
		changed := f.client(t, &client.Options{Policy: queueWrite(func(p *confirm.Policy) { p.ApprovalExpiry = time.Hour })})
		_, err := changed.Call(ctx, write("a", 1))
		if !errors.Is(err, client.ErrAwaitingApproval) || !strings.Contains(err.Error(), "approve it again") {
			t.Fatalf("Call under a changed policy = %v; want ErrAwaitingApproval asking to approve again", err)
		}
		if n := f.srv.TotalExecutions(); n != 0 {
			t.Fatalf("TotalExecutions = %d; want 0", n)
		}
	})
	t.Run("approver is the requester", func(t *testing.T) {
		distinct := func(p *confirm.Policy) { p.DistinctApprover = true }
		f := newQueueFixture(t, lp, &client.Options{Policy: queueWrite(distinct)})
		ctx := client.WithKey(context.Background(), "order-5")
		ce := f.queued(t, ctx, write("a", 1))
		id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: ce.Key}
		if _, err := client.Decide(ctx, f.approver, id, client.Decision{Approve: true, By: "alice", DistinctApprover: true}); !errors.Is(err, client.ErrSameApprover) {
			t.Fatalf("Decide by the requester = %v; want ErrSameApprover", err)
		}
		// An approver whose own policy does not say so is refused too: the
		// queued record carries its policy's rule, and an approval the
		// call would refuse is never recorded.
		if _, err := client.Decide(ctx, f.approver, id, client.Decision{Approve: true, By: "alice"}); !errors.Is(err, client.ErrSameApprover) {
			t.Fatalf("Decide by the requester under another policy = %v; want ErrSameApprover", err)
		}
		if _, err := f.c.Call(ctx, write("a", 1)); !errors.Is(err, client.ErrAwaitingApproval) {
			t.Fatalf("Call after the refused approval = %v; want ErrAwaitingApproval", err)
		}
		f.decide(t, ce.Key, client.Decision{Approve: true, By: "bob", DistinctApprover: true})
		if _, err := f.c.Call(ctx, write("a", 1)); err != nil {
			t.Fatalf("Call approved by bob = %v; want the result", err)
		}
		if n := f.srv.TotalExecutions(); n != 1 {
			t.Fatalf("TotalExecutions = %d; want 1", n)
		}
	})
	t.Run("expired", func(t *testing.T) {
		short := func(p *confirm.Policy) { p.Rules[0].Expiry = time.Hour }
		f := newQueueFixture(t, lp, &client.Options{Policy: queueWrite(short)})
		ctx := client.WithKey(context.Background(), "order-6")
		ce := f.queued(t, ctx, write("a", 1))
		f.clock.Advance(time.Hour)
		if _, err := client.Decide(ctx, f.approver, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: ce.Key}, client.Decision{Approve: true, By: "bob", Now: f.clock.Now}); !errors.Is(err, client.ErrNotQueued) {
			t.Fatalf("Decide after expiry = %v; want ErrNotQueued", err)
		}
		if n, err := f.approver.ExpireLeases(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireLeases = %d, %v; want 1", n, err)
		}
		r := record(t, f.caller, "write", ce.Key)
		if r.State != ledger.StateRejected || r.ErrorKind != ledger.KindApprovalExpired {
			t.Fatalf("expired approval = %s (%s); want REJECTED (%s)", r.State, r.ErrorKind, ledger.KindApprovalExpired)
		}
		// A later call queues it again: nothing ran, nothing was decided.
		f.queued(t, ctx, write("a", 1))
	})
}

func TestQueuedReplannedCall(t *testing.T) {
	f := newQueueFixture(t, ledgers[0], &client.Options{Policy: queueWrite(), Session: "s1"})
	ce := f.queued(t, context.Background(), write("b", 5))
	f.decide(t, ce.Key, client.Decision{Approve: true, By: "bob"})
	// The model re-plans the same call without a key, in the window.
	out, err := f.c.Call(context.Background(), write("b", 5))
	if err != nil || out.Key != ce.Key {
		t.Fatalf("re-planned call = %+v, %v; want the approved call %s run", out, err, ce.Key)
	}
	if n := f.srv.TotalExecutions(); n != 1 {
		t.Fatalf("TotalExecutions = %d; want 1", n)
	}
}

func TestQueueWhenNoOneCanBeAsked(t *testing.T) {
	p := askWrite()
	p.WhenNoOneCanBeAsked = confirm.Queue
	f := newQueueFixture(t, ledgers[0], &client.Options{Policy: p})
	f.queued(t, client.WithKey(context.Background(), "order-7"), write("a", 1))
}

// A confirmer that finds no one to ask (a host without elicitation, no
// terminal) hands the call to the queue when the policy says so.
func TestQueueWhenTheConfirmerFindsNoOne(t *testing.T) {
	p := askWrite()
	p.WhenNoOneCanBeAsked = confirm.Queue
	f := newQueueFixture(t, ledgers[0], &client.Options{Policy: p, Confirmer: confirm.Chain()})
	ce := f.queued(t, client.WithKey(context.Background(), "order-12"), write("a", 1))
	rec := record(t, f.caller, "write", ce.Key)
	if q, ok := client.QueuedCall(rec); !ok || process.Gone(rec.Owner) || rec.Fence != 2 {
		t.Fatalf("record owner %q fence %d = %+v, %v; want the queue's, fence 2 (claimed again after no one could be asked)", rec.Owner, rec.Fence, q, ok)
	}
	f.decide(t, ce.Key, client.Decision{Approve: true, By: "bob"})
	if _, err := f.c.Call(client.WithKey(context.Background(), "order-12"), write("a", 1)); err != nil {
		t.Fatalf("approved call = %v", err)
	}
	if n := f.srv.TotalExecutions(); n != 1 {
		t.Fatalf("TotalExecutions = %d; want 1", n)
	}
}

func TestQueuedSessionApproval(t *testing.T) {
	f := newQueueFixture(t, ledgers[0], &client.Options{Policy: queueWrite(), Session: "s1"})
	ce := f.queued(t, client.WithKey(context.Background(), "order-8"), write("a", 1))
	f.decide(t, ce.Key, client.Decision{Approve: true, ForSession: true, For: time.Hour, By: "bob"})
	if _, err := f.c.Call(client.WithKey(context.Background(), "order-8"), write("a", 1)); err != nil {
		t.Fatalf("approved call = %v", err)
	}
	// Later calls of the tool in the session run without a new approval...
	if _, err := f.c.Call(client.WithKey(context.Background(), "order-9"), write("c", 2)); err != nil {
		t.Fatalf("call under the session approval = %v; want it run", err)
	}
	// ... until it expires, and never in another session.
	elsewhere := f.client(t, &client.Options{Policy: queueWrite(), Session: "s2"})
	if _, err := elsewhere.Call(client.WithKey(context.Background(), "order-10"), write("d", 3)); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("call in another session = %v; want ErrAwaitingApproval", err)
	}
	f.clock.Advance(time.Hour)
	if _, err := f.c.Call(client.WithKey(context.Background(), "order-11"), write("e", 4)); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("call after the session approval expired = %v; want ErrAwaitingApproval", err)
	}
	if n := f.srv.TotalExecutions(); n != 2 {
		t.Fatalf("TotalExecutions = %d; want 2", n)
	}
}

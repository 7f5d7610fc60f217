// Package ledgertest is the conformance suite every ledger.Store passes.
// A Store's own tests call Run with a constructor for fresh, empty stores:
//
//	func TestStore(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T, now func() time.Time) ledger.Store {
//			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"),
//				&sqlite.Options{Now: now})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { st.Close() })
//			return st
//		})
//	}
//
// The suite drives time through the clock it passes to newStore: a Store
// must take every timestamp it writes or compares from that clock. The
// clock moves in whole microseconds, so stores with microsecond time (such
// as PostgreSQL) compare exactly.
package ledgertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
)

// NewStore returns a fresh, empty Store whose clock is now. It registers
// its own cleanup (Close) with t.
type NewStore func(t *testing.T, now func() time.Time) ledger.Store

// Run runs the whole conformance suite against stores made by newStore.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	groups := []struct {
		name string
		run  func(*testing.T, NewStore)
	}{
		{"Claim", testClaim},
		{"Transition", testTransition},
		{"Lease", testLease},
		{"Fence", testFence},
		{"Rejected", testRejected},
		{"Wait", testWait},
		{"Tenant", testTenant},
		{"Layer", testLayer},
		{"Retention", testRetention},
		{"Recent", testRecent},
		{"List", testList},
		{"Payload", testPayload},
		{"Lifecycle", testLifecycle},
		{"TakeOver", testTakeOver},
		{"Scratch", testScratch},
		{"Resolve", testResolve},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { g.run(t, newStore) })
	}
}

// Start is where every suite clock starts: a whole microsecond, far from
// the zero time and from the Unix epoch.
var Start = time.Date(2030, time.March, 4, 5, 6, 7, 890123000, time.UTC)

// Clock is a manual clock safe for concurrent use. The zero value reads
// Start.
type Clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = Start
	}
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = Start
	}
	c.t = c.t.Add(d)
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// env is one subtest's store and clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	st    ledger.Store
	clock *Clock
}

const (
	tenant = "tenant-a"
	tool   = "create_payment"
)

func newEnv(t *testing.T, newStore NewStore) *env {
	t.Helper()
	c := NewClock(Start)
	return &env{t: t, ctx: context.Background(), st: newStore(t, c.Now), clock: c}
}

// sub returns e reporting to the subtest t.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

func id(key string) ledger.ID { return ledger.ID{Tenant: tenant, Tool: tool, Key: key} }

// fp is a fingerprint-shaped value standing for the arguments v.
func fp(v string) string {
	f, err := args.Fingerprint(json.RawMessage(fmt.Sprintf(`{"v":%q}`, v)))
	if err != nil {
		panic(err)
	}
	return f
}

// req is a plain claim of key by owner.
func req(key, owner string) ledger.ClaimRequest {
	return ledger.ClaimRequest{
		ID:          id(key),
		Session:     "session-1",
		Fingerprint: fp("a"),
		Arguments:   json.RawMessage(`{"amount":42}`),
		Owner:       owner,
	}
}

// mustClaim claims and requires the caller to win.
func (e *env) mustClaim(r ledger.ClaimRequest) *ledger.Record {
	e.t.Helper()
	c, err := e.st.Claim(e.ctx, r)
	if err != nil || !c.Won || c.Record == nil {
		e.t.Fatalf("Claim(%q) = {Won: %v}, %v; want a won claim", r.Key, c.Won, err)
	}
	return c.Record
}

func (e *env) mustTransition(tr ledger.Transition) *ledger.Record {
	e.t.Helper()
	r, err := e.st.Transition(e.ctx, tr)
	if err != nil {
		e.t.Fatalf("Transition(%q, %s -> %s) = %v; want success", tr.Key, tr.From, tr.To, err)
	}
	return r
}

func (e *env) mustGet(i ledger.ID) *ledger.Record {
	e.t.Helper()
	r, err := e.st.Get(e.ctx, i)
	if err != nil {
		e.t.Fatalf("Get(%q) = %v; want the record", i.Key, err)
	}
	return r
}

// reach creates the record of key (claimed by owner-1) and drives it into
// state by legal transitions only.
func (e *env) reach(key string, state ledger.State) *ledger.Record {
	e.t.Helper()
	r := req(key, "owner-1")
	r.NeedsApproval = state == ledger.StatePendingApproval || state == ledger.StateDenied
	rec := e.mustClaim(r)
	step := func(from, to ledger.State) {
		rec = e.mustTransition(ledger.Transition{ID: id(key), From: from, To: to, Owner: "owner-1", Fence: rec.Fence, AddAttempts: 1})
	}
	switch state {
	case ledger.StatePendingApproval, ledger.StateProcessing:
	case ledger.StateDenied:
		step(ledger.StatePendingApproval, ledger.StateDenied)
	case ledger.StateSucceeded, ledger.StateFailed, ledger.StateRetryable, ledger.StateRejected, ledger.StateUnknown:
		step(ledger.StateProcessing, state)
	default:
		e.t.Fatalf("reach(%q, %q): no such state", key, state)
	}
	if rec.State != state {
		e.t.Fatalf("reach(%q, %s) ended in %s", key, state, rec.State)
	}
	return rec
}

// diff describes how two records differ ("" when they are the same).
// Times compare with Equal so that locations do not matter.
func diff(got, want *ledger.Record) string {
	if got == nil || want == nil {
		if got == want {
			return ""
		}
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	var d []string
	add := func(field string, g, w any) { d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w)) }
	if got.ID != want.ID {
		add("ID", got.ID, want.ID)
	}
	if got.Session != want.Session {
		add("Session", got.Session, want.Session)
	}
	if got.Fingerprint != want.Fingerprint {
		add("Fingerprint", got.Fingerprint, want.Fingerprint)
	}
	if !bytes.Equal(got.Arguments, want.Arguments) {
		add("Arguments", short(got.Arguments), short(want.Arguments))
	}
	if got.State != want.State {
		add("State", got.State, want.State)
	}
	if got.Attempts != want.Attempts {
		add("Attempts", got.Attempts, want.Attempts)
	}
	if !bytes.Equal(got.Result, want.Result) {
		add("Result", short(got.Result), short(want.Result))
	}
	if got.Compacted != want.Compacted {
		add("Compacted", got.Compacted, want.Compacted)
	}
	if got.ErrorKind != want.ErrorKind || got.ErrorMessage != want.ErrorMessage {
		add("Error", got.ErrorKind+": "+got.ErrorMessage, want.ErrorKind+": "+want.ErrorMessage)
	}
	if got.Owner != want.Owner {
		add("Owner", got.Owner, want.Owner)
	}
	if got.Fence != want.Fence {
		add("Fence", got.Fence, want.Fence)
	}
	if !got.LeaseUntil.Equal(want.LeaseUntil) {
		add("LeaseUntil", got.LeaseUntil, want.LeaseUntil)
	}
	if !sameApproval(got.Approval, want.Approval) {
		add("Approval", got.Approval, want.Approval)
	}
	if got.TraceID != want.TraceID || got.SpanID != want.SpanID {
		add("Trace", got.TraceID+"/"+got.SpanID, want.TraceID+"/"+want.SpanID)
	}
	if got.ReusePolicy != want.ReusePolicy {
		add("ReusePolicy", got.ReusePolicy, want.ReusePolicy)
	}
	if got.Tombstone != want.Tombstone {
		add("Tombstone", got.Tombstone, want.Tombstone)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		add("CreatedAt", got.CreatedAt, want.CreatedAt)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		add("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	}
	if !got.ExpiresAt.Equal(want.ExpiresAt) {
		add("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	}
	return strings.Join(d, "; ")
}

func sameApproval(a, b *ledger.Approval) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Decision == b.Decision && a.By == b.By && a.At.Equal(b.At) && a.Reason == b.Reason
}

func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// keys lists the keys of recs, in order.
func keys(recs []*ledger.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Tenant + "/" + r.Tool + "/" + r.Key
	}
	return out
}

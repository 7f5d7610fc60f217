package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

func TestTakeMode(t *testing.T) {
	for _, tc := range []struct {
		name, url, rest string
		portable, bad   bool
	}{
		{"none", "postgres://u:p@h/db", "postgres://u:p@h/db", false, false},
		{"other params kept", "postgres://u:p@h/db?sslmode=disable&search_path=x", "postgres://u:p@h/db?sslmode=disable&search_path=x", false, false},
		{"alone", "postgres://u:p@h/db?mcpledger_mode=portable", "postgres://u:p@h/db", true, false},
		{"first", "postgres://h/db?mcpledger_mode=portable&sslmode=disable", "postgres://h/db?sslmode=disable", true, false},
		{"last", "postgres://h/db?sslmode=disable&mcpledger_mode=Portable", "postgres://h/db?sslmode=disable", true, false},
		{"multi-host", "postgres://u:p@a:5432,b:5433/db?target_session_attrs=read-write&mcpledger_mode=portable", "postgres://u:p@a:5432,b:5433/db?target_session_attrs=read-write", true, false},
		{"default", "postgres://h/db?mcpledger_mode=default", "postgres://h/db", false, false},
		{"unknown", "postgres://h/db?mcpledger_mode=fast", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, portable, err := takeMode(tc.url)
			if (err != nil) != tc.bad || rest != tc.rest || portable != tc.portable {
				t.Errorf("takeMode(%q) = %q, %v, %v; want %q, %v, error %v", tc.url, rest, portable, err, tc.rest, tc.portable, tc.bad)
			}
			if u, err := DriverURL(tc.url); u != tc.rest || (err != nil) != tc.bad {
				t.Errorf("DriverURL(%q) = %q, %v; want %q, error %v", tc.url, u, err, tc.rest, tc.bad)
			}
		})
	}
}

// portableURL is a fresh schema's URL in the portable mode, every
// transaction serializable as on CockroachDB and Spanner.
func portableURL(t *testing.T) string {
	return pgtest.Schema(t) + "&" + ModeParam + "=portable&default_transaction_isolation=serializable"
}

// TestPortableSerializationRetried: many callers claim the same keys at
// once on serializable transactions. PostgreSQL aborts an insert whose
// conflicting row its snapshot cannot see with SQLSTATE 40001; the
// portable mode retries it with the same key, so each key has exactly one
// winner and no caller sees an error.
func TestPortableSerializationRetried(t *testing.T) {
	url := portableURL(t)
	// Two Stores, so that claims also race across pools, not only inside
	// one batcher.
	stores := []*Store{openT(t, url, nil), openT(t, url, nil)}
	before := serializationRetries.Load()
	const keys, callers = 20, 16
	ctx := context.Background()
	var winners [keys]atomic.Int64
	var failed atomic.Int64
	for k := range keys {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				<-start
				st := stores[c%len(stores)]
				cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: "t", Tool: "pay", Key: fmt.Sprintf("k-%d", k)},
					Fingerprint: "fp", Owner: fmt.Sprintf("o-%d", c), Arguments: json.RawMessage(`{}`)})
				if err != nil {
					failed.Add(1)
					t.Errorf("Claim(k-%d) by caller %d = %v", k, c, err)
					return
				}
				if cl.Won {
					winners[k].Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	for k := range keys {
		if n := winners[k].Load(); n != 1 {
			t.Errorf("key k-%d had %d winners; want 1", k, n)
		}
	}
	if failed.Load() > 0 {
		t.Fatalf("%d claims failed", failed.Load())
	}
	if serializationRetries.Load() == before {
		t.Errorf("no serialization failure was retried in %d racing claims: the test did not exercise the retry", keys*callers)
	}
}

// TestPortableWaitPolls: a follower in another Store gets the record once
// the owner settles it, with no LISTEN: its listener never starts, no
// watch mark is written, and the owner sends no notification.
func TestPortableWaitPolls(t *testing.T) {
	url := portableURL(t)
	owner := openT(t, url, &Options{PollMin: time.Millisecond, PollMax: 20 * time.Millisecond})
	follower := openT(t, url, &Options{PollMin: time.Millisecond, PollMax: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}
	c, err := owner.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o"})
	if err != nil || !c.Won {
		t.Fatalf("Claim = {Won: %v}, %v; want won", c.Won, err)
	}
	got := waitFrom(ctx, t, follower, id)
	if _, err := owner.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "o", Fence: c.Record.Fence, Result: json.RawMessage(`{"ok":true}`), AddAttempts: 1}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
	select {
	case rec := <-got:
		if rec == nil || rec.State != ledger.StateSucceeded {
			t.Fatalf("Wait = %+v; want SUCCEEDED", rec)
		}
	case <-ctx.Done():
		t.Fatal("Wait never returned")
	}
	for name, st := range map[string]*Store{"owner": owner, "follower": follower} {
		st.lis.mu.Lock()
		started, pending := st.lis.started, len(st.lis.pending)
		st.lis.mu.Unlock()
		if started || pending > 0 {
			t.Errorf("%s's listener: started %v, %d notifications pending; want neither in the portable mode", name, started, pending)
		}
	}
	_, meta, err := follower.get(ctx, id)
	if err != nil || meta.watched {
		t.Errorf("record watched = %v (%v); want no watch mark in the portable mode", meta.watched, err)
	}
}

// TestPortableOpenRace: eight Stores open one fresh schema at once with
// no advisory lock; every one succeeds, and each migration is applied
// once.
func TestPortableOpenRace(t *testing.T) {
	url := portableURL(t)
	const n = 8
	var wg sync.WaitGroup
	stores := make([]*Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(context.Background(), url, nil)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open #%d = %v", i, err)
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		return
	}
	var rows, max int
	if err := stores[0].pool.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if want := SchemaVersion(); rows != want || max != want {
		t.Errorf("schema_migrations has %d rows up to version %d; want %d", rows, max, want)
	}
}

// TestPortableWriteBehindDurable: a write-behind completion in the
// portable mode takes the durable path, without SET LOCAL
// synchronous_commit, which the distributed databases do not have. The
// write-behind batcher is stopped here (no flight may start), so a
// completion sent to it would wait until the context ends.
func TestPortableWriteBehindDurable(t *testing.T) {
	st := openT(t, portableURL(t), &Options{Durability: ledger.WriteBehind})
	st.behind.flights = 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o"})
	if err != nil || !c.Won {
		t.Fatalf("Claim = {Won: %v}, %v; want won", c.Won, err)
	}
	rec, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "o", Fence: c.Record.Fence, Result: json.RawMessage(`{}`), AddAttempts: 1})
	if err != nil || rec.State != ledger.StateSucceeded {
		t.Fatalf("Transition under WriteBehind = %v, %v; want SUCCEEDED by the durable path", rec, err)
	}
}

// TestPortableSweepersRace: without SKIP LOCKED, sweepers in several
// processes read the same expired leases; each record must still change
// once, PROCESSING to UNKNOWN, never again (a second update would read it
// as not PROCESSING and make it REJECTED).
func TestPortableSweepersRace(t *testing.T) {
	url := pgtest.Schema(t) + "&" + ModeParam + "=portable"
	var clock atomic.Int64 // Unix nanoseconds
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	sweepers := []*Store{openT(t, url, &Options{Now: now}), openT(t, url, &Options{Now: now}), openT(t, url, &Options{Now: now})}
	ctx := context.Background()
	const rounds, records = 4, 200
	for round := range rounds {
		clock.Store(time.Now().UnixNano())
		for i := range records {
			id := ledger.ID{Tenant: "t", Tool: "pay", Key: fmt.Sprintf("r%d-%d", round, i)}
			if _, err := sweepers[0].Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o", Lease: time.Millisecond}); err != nil {
				t.Fatalf("Claim(%s) = %v", id.Key, err)
			}
		}
		clock.Add(int64(time.Hour))
		var changed atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, st := range sweepers {
			wg.Go(func() {
				<-start
				n, err := st.ExpireLeases(ctx)
				if err != nil {
					t.Errorf("ExpireLeases = %v", err)
				}
				changed.Add(int64(n))
			})
		}
		close(start)
		wg.Wait()
		if n := changed.Load(); n != records {
			t.Errorf("round %d: the sweepers changed %d records in all; want %d, each once", round, n, records)
		}
		page, err := sweepers[0].List(ctx, ledger.Filter{Tenant: "t", State: ledger.StateRejected})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) > 0 {
			t.Fatalf("round %d: %d expired PROCESSING records became REJECTED; want UNKNOWN", round, len(page.Records))
		}
	}
}

package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// reportCPU adds cpu-ns/op, measured since start.
func reportCPU(b *testing.B, start time.Duration) {
	if !cpuMeasured {
		return
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

var smallResult = json.RawMessage(`{"content":[{"type":"text","text":"order 42 created"}]}`)

// claimComplete is one whole operation: claim, then record the result.
func claimComplete(b *testing.B, st *sqlite.Store, key string) {
	ctx := context.Background()
	req := claimReq(key, "bench")
	c, err := st.Claim(ctx, req)
	if err != nil || !c.Won {
		b.Fatalf("Claim(%q) = {Won: %v}, %v", key, c.Won, err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "bench", Fence: c.Record.Fence, Result: smallResult, AddAttempts: 1}); err != nil {
		b.Fatalf("Transition(%q) = %v", key, err)
	}
}

// BenchmarkClaimComplete: one caller, durable (synchronous=FULL) mode.
func BenchmarkClaimComplete(b *testing.B) {
	st := openStore(b, nil)
	b.ResetTimer()
	defer reportCPU(b, cpuTime(b))
	for i := 0; b.Loop(); i++ {
		claimComplete(b, st, fmt.Sprintf("k%d", i))
	}
}

// rawDB is a ledger file the store created (schema, WAL), reopened through
// bare database/sql with the store's durable pragmas and one connection.
func rawDB(b *testing.B) *sql.DB {
	path := filepath.Join(b.TempDir(), "ledger.db")
	st, err := sqlite.Open(context.Background(), path, nil) // schema
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	q := url.Values{}
	q.Set("_busy_timeout", "5000")
	q.Set("_synchronous", "FULL")
	q.Set("_journal_mode", "WAL")
	q.Set("_mutex", "no")
	q.Set("_txlock", "immediate")
	db, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return db
}

// BenchmarkFsyncFloor is one durable commit of one small row on the kind
// of file the store writes (WAL, synchronous=FULL): the unit of the
// floor. A durable protected call cannot cost less than the bare call plus
// one of these (the claim must be on disk before the request leaves).
func BenchmarkFsyncFloor(b *testing.B) {
	db := rawDB(b)
	if _, err := db.Exec(`CREATE TABLE floor (k TEXT PRIMARY KEY, v BLOB)`); err != nil {
		b.Fatal(err)
	}
	insert, err := db.Prepare(`INSERT INTO floor (k, v) VALUES (?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer reportCPU(b, cpuTime(b))
	for i := 0; b.Loop(); i++ {
		if _, err := insert.Exec(fmt.Sprintf("k%d", i), []byte(smallResult)); err != nil {
			b.Fatal(err)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM floor`).Scan(&n); err != nil || n != b.N {
		b.Fatalf("floor rows = %d, %v; want %d", n, err, b.N)
	}
}

// BenchmarkRawFloor runs the same two statements through bare database/sql
// with the same pragmas: what any SQLite ledger pays at least.
func BenchmarkRawFloor(b *testing.B) {
	floor := rawFloor(b)
	b.ResetTimer()
	defer reportCPU(b, cpuTime(b))
	for i := 0; b.Loop(); i++ {
		floor(fmt.Sprintf("k%d", i))
	}
}

// rawFloor returns one operation of the floor: the claim's INSERT and the
// completion's UPDATE of a record of this shape, each its own durable
// commit, on a ledger file of its own.
func rawFloor(b *testing.B) func(key string) {
	db := rawDB(b)
	insert, err := db.Prepare(`INSERT INTO records (tenant, layer, tool, key, session, fingerprint, arguments, state, owner,
		lease_until, trace_id, span_id, reuse_policy, created_at, updated_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'PROCESSING', ?, ?, '', '', 'reexecute', ?, ?, ?)
		ON CONFLICT (tenant, layer, tool, key) DO NOTHING`)
	if err != nil {
		b.Fatal(err)
	}
	update, err := db.Prepare(`UPDATE records SET state = 'SUCCEEDED', result = ?, attempts = attempts + 1, updated_at = ?, lease_until = 0
		WHERE tenant = ? AND layer = ? AND tool = ? AND key = ? AND state = 'PROCESSING' AND owner = ?`)
	if err != nil {
		b.Fatal(err)
	}
	return func(key string) {
		req := claimReq(key, "bench")
		now := time.Now().UnixNano()
		if _, err := insert.Exec(req.Tenant, req.Layer, req.Tool, req.Key, req.Session, req.Fingerprint, []byte(req.Arguments), req.Owner,
			now+int64(ledger.DefaultLease), now, now, now+int64(ledger.DefaultRetention)); err != nil {
			b.Fatal(err)
		}
		res, err := update.Exec([]byte(smallResult), time.Now().UnixNano(), req.Tenant, req.Layer, req.Tool, req.Key, req.Owner)
		if err != nil {
			b.Fatal(err)
		}
		// The floor must do the store's work: a claim that inserted
		// nothing would leave the update nothing to change.
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			b.Fatalf("raw completion of %q changed %d rows, %v; want 1", req.Key, n, err)
		}
	}
}

// BenchmarkClaimCompleteVsFloor runs BenchmarkClaimComplete's operation
// and BenchmarkRawFloor's turn about in one loop, each on its own file,
// and reports both and their ratio: on a shared machine the time of an
// fsync drifts by the second, and only turns taken together meet the same
// drift. The order alternates, so neither always follows the other's
// commit.
func BenchmarkClaimCompleteVsFloor(b *testing.B) {
	st := openStore(b, nil)
	floor := rawFloor(b)
	var store, raw time.Duration
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("k%d", i)
		storeTurn := func() {
			t0 := time.Now()
			claimComplete(b, st, key)
			store += time.Since(t0)
		}
		rawTurn := func() {
			t0 := time.Now()
			floor(key)
			raw += time.Since(t0)
		}
		if i%2 == 0 {
			storeTurn()
			rawTurn()
		} else {
			rawTurn()
			storeTurn()
		}
	}
	b.ReportMetric(float64(store.Nanoseconds())/float64(b.N), "store-ns/op")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(store)/float64(raw), "store/floor")
}

// BenchmarkClaimCompleteParallel: 64 goroutines, distinct keys, durable
// mode. Group commit lets them share fsyncs.
func BenchmarkClaimCompleteParallel(b *testing.B) {
	st := openStore(b, nil)
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	defer reportCPU(b, cpuTime(b))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			claimComplete(b, st, fmt.Sprintf("k%d", next.Add(1)))
		}
	})
}

// BenchmarkReplay reads a SUCCEEDED record by key, as a duplicate call does.
func BenchmarkReplay(b *testing.B) {
	st := openStore(b, nil)
	claimComplete(b, st, "done")
	id := claimReq("done", "").ID
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime(b))
	for b.Loop() {
		r, err := st.Get(ctx, id)
		if err != nil || r.State != ledger.StateSucceeded {
			b.Fatalf("Get = %v, %v", r, err)
		}
	}
}

// BenchmarkReplayClaim is a duplicate Claim of a SUCCEEDED key: answered by
// a read, without the write lock.
func BenchmarkReplayClaim(b *testing.B) {
	st := openStore(b, nil)
	claimComplete(b, st, "done")
	req := claimReq("done", "other")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuTime(b))
	for b.Loop() {
		c, err := st.Claim(ctx, req)
		if err != nil || c.Won || c.Record.State != ledger.StateSucceeded {
			b.Fatalf("Claim = {Won: %v}, %v", c.Won, err)
		}
	}
}

// BenchmarkClaimCompleteWriteBehind: one caller, durable claims, outcomes
// written behind (one fsync per operation instead of two).
func BenchmarkClaimCompleteWriteBehind(b *testing.B) {
	st := openStore(b, &sqlite.Options{Durability: ledger.WriteBehind})
	defer reportCPU(b, cpuTime(b))
	for i := 0; b.Loop(); i++ {
		claimComplete(b, st, fmt.Sprintf("k%d", i))
	}
}

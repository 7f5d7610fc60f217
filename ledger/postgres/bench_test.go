package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

var benchResult = json.RawMessage(`{"content":[{"type":"text","text":"payment p-1 created"}],"isError":false}`)

func claimComplete(b *testing.B, st *postgres.Store, key string) {
	ctx := context.Background()
	id := ledger.ID{Tenant: "bench", Tool: "create_payment", Key: key}
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "w", Arguments: json.RawMessage(`{"amount":42}`)})
	if err != nil || !c.Won {
		b.Fatalf("Claim(%q) = {Won: %v}, %v; want a won claim", key, c.Won, err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "w", Fence: c.Record.Fence, Result: benchResult, AddAttempts: 1}); err != nil {
		b.Fatalf("Transition(%q) = %v", key, err)
	}
}

// modes are the store's modes the benchmarks compare in one run: the
// default, and the portable mode for PG-wire distributed databases (on
// PostgreSQL, so the difference is the store's own).
var modes = []struct{ name, params string }{
	{"default", ""},
	{"portable", "&" + postgres.ModeParam + "=portable"},
}

// BenchmarkClaimComplete is one executed operation: claim a new key, then
// record its result, in each mode.
func BenchmarkClaimComplete(b *testing.B) {
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			st := open(b, pgtest.Schema(b)+mode.params, &postgres.Options{MaxConns: 1})
			b.ResetTimer()
			for i := range b.N {
				claimComplete(b, st, fmt.Sprintf("k-%d", i))
			}
		})
	}
}

// BenchmarkClaimCompleteModes alternates one operation in the default mode
// with one in the portable mode, each on its own Store and schema, and
// reports both and their ratio: alternating keeps a shared machine's drift
// out of the comparison, which separate runs of BenchmarkClaimComplete's
// sub-benchmarks do not.
func BenchmarkClaimCompleteModes(b *testing.B) {
	def := open(b, pgtest.Schema(b), &postgres.Options{MaxConns: 1})
	port := open(b, pgtest.Schema(b)+modes[1].params, &postgres.Options{MaxConns: 1})
	var d, p time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Each goes first every other time: the second of a pair may find
		// the server busier (or idler) after the first one's commit.
		first, second, fd, sd := def, port, &d, &p
		if i%2 == 1 {
			first, second, fd, sd = port, def, &p, &d
		}
		t0 := time.Now()
		claimComplete(b, first, fmt.Sprintf("k-%d", i))
		t1 := time.Now()
		claimComplete(b, second, fmt.Sprintf("k-%d", i))
		*fd += t1.Sub(t0)
		*sd += time.Since(t1)
	}
	b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "default-ns/op")
	b.ReportMetric(float64(p.Nanoseconds())/float64(b.N), "portable-ns/op")
	b.ReportMetric(float64(p)/float64(d), "portable/default")
}

// BenchmarkRawFloor is the same work as BenchmarkClaimComplete as two bare
// statements on one pgx connection, with no ledger logic: the floor the
// Store is measured against.
func BenchmarkRawFloor(b *testing.B) {
	url := pgtest.Schema(b)
	open(b, url, nil).Close() // creates the table
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	b.ResetTimer()
	for i := range b.N {
		rawInsertUpdate(b, conn, fmt.Sprintf("k-%d", i))
	}
}

func rawInsertUpdate(b testing.TB, conn *pgx.Conn, key string) {
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `INSERT INTO records (tenant, layer, tool, key, fingerprint, arguments, state, owner,
			lease_until, created_at, updated_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, 'PROCESSING', $7, now(), now(), now(), now())`,
		"bench", "", "create_payment", key, "fp", []byte(`{"amount":42}`), "w"); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE records SET state = 'SUCCEEDED', result = $5, attempts = attempts + 1,
			lease_until = NULL, updated_at = now()
		WHERE tenant = $1 AND layer = $2 AND tool = $3 AND key = $4 AND state = 'PROCESSING' AND owner = 'w'`,
		"bench", "", "create_payment", key, []byte(benchResult)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkClaimCompleteVsFloor alternates one Store operation with one
// raw floor operation on the same server and reports both, and their
// ratio: on a shared machine the fsync time drifts, and alternating keeps
// the drift out of the comparison. "durable" is the default commit;
// "async" turns synchronous_commit off for both sides to show the Store's
// own overhead without the fsync.
func BenchmarkClaimCompleteVsFloor(b *testing.B) {
	for _, mode := range []struct{ name, params string }{
		{"durable", ""},
		{"async", "&synchronous_commit=off"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			url := pgtest.Schema(b) + mode.params
			st := open(b, url, &postgres.Options{MaxConns: 1})
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			var store, floor time.Duration
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				rawInsertUpdate(b, conn, fmt.Sprintf("raw-%d", i))
				t1 := time.Now()
				claimComplete(b, st, fmt.Sprintf("k-%d", i))
				store += time.Since(t1)
				floor += t1.Sub(t0)
			}
			b.ReportMetric(float64(store.Nanoseconds())/float64(b.N), "store-ns/op")
			b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/op")
			b.ReportMetric(float64(store)/float64(floor), "store/floor")
		})
	}
}

// BenchmarkClaimCompleteParallel runs ClaimComplete from 64 goroutines on
// distinct keys, on the default pool, in each mode.
func BenchmarkClaimCompleteParallel(b *testing.B) {
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			st := open(b, pgtest.Schema(b)+mode.params, nil)
			var n atomic.Int64
			b.SetParallelism(max(1, 64/runtimeProcs()))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					claimComplete(b, st, fmt.Sprintf("k-%d", n.Add(1)))
				}
			})
		})
	}
}

// BenchmarkClaimCompleteScaling alternates short runs of the two above,
// a lone caller (pool of one) and 64 callers (default pool) each on its own
// Store, and reports both and the throughput ratio of 64 callers to one.
// On a shared machine the load drifts over seconds; alternating every few
// hundred milliseconds puts the same drift on both sides.
func BenchmarkClaimCompleteScaling(b *testing.B) {
	url := pgtest.Schema(b)
	lone := open(b, url, &postgres.Options{MaxConns: 1})
	many := open(b, url, nil)
	const callers, serialChunk, parallelChunk = 64, 100, 640
	var serial, parallel time.Duration
	var serialOps, parallelOps, n atomic.Int64
	b.ResetTimer()
	for done := 0; done < b.N; {
		chunk := min(serialChunk, b.N-done)
		t0 := time.Now()
		for range chunk {
			claimComplete(b, lone, fmt.Sprintf("s-%d", n.Add(1)))
		}
		serial += time.Since(t0)
		serialOps.Add(int64(chunk))

		pchunk := min(parallelChunk, max(callers, (b.N-done)*parallelChunk/serialChunk))
		var left atomic.Int64
		left.Store(int64(pchunk))
		var wg sync.WaitGroup
		t1 := time.Now()
		for range callers {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					claimComplete(b, many, fmt.Sprintf("p-%d", n.Add(1)))
				}
			})
		}
		wg.Wait()
		parallel += time.Since(t1)
		parallelOps.Add(int64(pchunk))
		done += chunk
	}
	s := float64(serial.Nanoseconds()) / float64(serialOps.Load())
	p := float64(parallel.Nanoseconds()) / float64(parallelOps.Load())
	b.ReportMetric(s, "serial-ns/op")
	b.ReportMetric(p, "parallel-ns/op")
	b.ReportMetric(s/p, "parallel/serial")
}

// BenchmarkClaimCompleteWriteBehind is BenchmarkClaimComplete with the
// outcome committed with synchronous_commit off: one WAL flush per
// operation instead of two.
func BenchmarkClaimCompleteWriteBehind(b *testing.B) {
	st := open(b, pgtest.Schema(b), &postgres.Options{MaxConns: 1, Durability: ledger.WriteBehind})
	for i := 0; b.Loop(); i++ {
		claimComplete(b, st, fmt.Sprintf("k-%d", i))
	}
}

// BenchmarkFollower is a duplicate claim of a settled operation: the
// replay path.
func BenchmarkFollower(b *testing.B) {
	st := open(b, pgtest.Schema(b), nil)
	claimComplete(b, st, "k")
	ctx := context.Background()
	req := ledger.ClaimRequest{ID: ledger.ID{Tenant: "bench", Tool: "create_payment", Key: "k"}, Fingerprint: "fp", Owner: "x"}
	b.ResetTimer()
	for range b.N {
		c, err := st.Claim(ctx, req)
		if err != nil || c.Won {
			b.Fatalf("Claim = {Won: %v}, %v; want a follower", c.Won, err)
		}
	}
}

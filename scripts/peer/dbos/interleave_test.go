package peer_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/mattn/go-sqlite3"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// The interleaved benchmarks run every contender in one loop, a turn each
// per iteration, and report each one's time per operation (NAME-ns/op):
// on a shared machine the load changes by the second, and only contenders
// measured turn about meet the same load. The separate benchmarks
// (BenchmarkDBOSSQLite, BenchmarkLedgerFull, ...) measure one contender
// at a time, for profiles.

// burstPerCaller is how many operations each of the 64 callers makes in
// one turn of a 64-caller sub-benchmark.
const burstPerCaller = 2

// entrant is one contender's turn.
type entrant struct {
	name string
	op   func() error
}

// interleave runs one turn of every entrant per iteration, rotating the
// order so that no entrant always follows the same one (a write-behind
// flush, say, lands on whoever goes next), and reports each entrant's
// time per operation. With callers > 1 a turn is a burst: callers
// goroutines making burstPerCaller operations each, timed from the first
// start to the last end (1 / throughput).
func interleave(b *testing.B, callers int, es []entrant) {
	spent := make([]time.Duration, len(es))
	ops := make([]int, len(es))
	for i := 0; b.Loop(); i++ {
		for j := range es {
			k := (i + j) % len(es)
			t0 := time.Now()
			n, err := turn(callers, es[k].op)
			spent[k] += time.Since(t0)
			ops[k] += n
			if err != nil {
				b.Fatalf("%s: %v", es[k].name, err)
			}
		}
	}
	for k, e := range es {
		b.ReportMetric(float64(spent[k].Nanoseconds())/float64(ops[k]), e.name+"-ns/op")
	}
}

// turn runs op once, or callers × burstPerCaller times from callers
// goroutines, and returns how many operations it made.
func turn(callers int, op func() error) (int, error) {
	if callers == 1 {
		return 1, op()
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			for range burstPerCaller {
				if err := op(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return callers * burstPerCaller, <-errs
}

// field is the contenders of one interleaved benchmark.
type field struct {
	bare   func() error
	floor  func() error // nil: no floor in this field
	rivals []struct {
		name string
		c    *contender
	}
}

func (f *field) add(b *testing.B, name string, c *contender) {
	populate(b, c)
	f.rivals = append(f.rivals, struct {
		name string
		c    *contender
	}{name, c})
}

// run measures the field's first calls and replays, by one caller and by
// 64, each contender turn about. Replays must never reach a server.
func (f *field) run(b *testing.B) {
	ctx := context.Background()
	firsts := func(withFloor bool) []entrant {
		es := []entrant{{"bare", f.bare}}
		if withFloor && f.floor != nil {
			es = append(es, entrant{"fsyncfloor", f.floor})
		}
		for _, r := range f.rivals {
			es = append(es, entrant{r.name, func() error { return r.c.first(ctx) }})
		}
		return es
	}
	replays := func() []entrant {
		var es []entrant
		for _, r := range f.rivals {
			var next int
			var mu sync.Mutex // guards next
			es = append(es, entrant{r.name, func() error {
				mu.Lock()
				next = (next + 101) % replayKeys
				i := next
				mu.Unlock()
				return r.c.replay(ctx, i)
			}})
		}
		return es
	}
	b.Run("first", func(b *testing.B) { interleave(b, 1, firsts(true)) })
	b.Run("first_64way", func(b *testing.B) { interleave(b, 64, firsts(false)) })
	executed := make([]int, len(f.rivals))
	for i, r := range f.rivals {
		executed[i] = r.c.srv.TotalExecutions()
	}
	b.Run("replay", func(b *testing.B) { interleave(b, 1, replays()) })
	b.Run("replay_64way", func(b *testing.B) { interleave(b, 64, replays()) })
	for i, r := range f.rivals {
		if n := r.c.srv.TotalExecutions() - executed[i]; n != 0 {
			b.Fatalf("%s: replays executed the tool %d more times; want 0", r.name, n)
		}
	}
}

// fsyncFloor is sqlite's BenchmarkFsyncFloor as one operation: a durable
// commit of one small row (WAL, synchronous=FULL) on a file the store
// created, through bare database/sql and the same SQLite build.
func fsyncFloor(b *testing.B) func() error {
	path := filepath.Join(b.TempDir(), "floor.db")
	st, err := sqlite.Open(context.Background(), path, nil)
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
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE floor (k TEXT PRIMARY KEY, v BLOB)`); err != nil {
		b.Fatal(err)
	}
	insert, err := db.Prepare(`INSERT INTO floor (k, v) VALUES (?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	row := []byte(`{"content":[{"type":"text","text":"order 42 created"}]}`)
	var n int
	return func() error {
		n++
		_, err := insert.Exec(fmt.Sprintf("k%d", n), row)
		return err
	}
}

// BenchmarkInterleavedSQLite: the bare call, the fsync floor (first calls
// by one caller only), DBOS on SQLite and the client on SQLite FULL and
// write-behind, turn about.
func BenchmarkInterleavedSQLite(b *testing.B) {
	f := &field{bare: bare(b), floor: fsyncFloor(b)}
	f.add(b, "dbos", dbosContender(b, dbos.Config{DatabaseURL: "sqlite:" + filepath.Join(b.TempDir(), "dbos.db")}))
	f.add(b, "full", ledgerContender(b, openSQLite(b), client.Options{}))
	f.add(b, "writebehind", ledgerContender(b, openSQLite(b), client.Options{Durability: ledger.WriteBehind}))
	f.run(b)
}

// BenchmarkInterleavedPostgres: the bare call, DBOS on PostgreSQL and the
// client on PostgreSQL, turn about, each store in a schema of its own.
func BenchmarkInterleavedPostgres(b *testing.B) {
	f := &field{bare: bare(b)}
	u, err := url.Parse(pgtest.Schema(b))
	if err != nil {
		b.Fatal(err)
	}
	f.add(b, "dbos", dbosContender(b, dbos.Config{DatabaseURL: pgtest.URL(b), DatabaseSchema: u.Query().Get("search_path")}))
	st, err := postgres.Open(context.Background(), pgtest.Schema(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	f.add(b, "postgres", ledgerContender(b, st, client.Options{}))
	f.run(b)
}

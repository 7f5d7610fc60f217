// Command purgestall measures how long a purge keeps calls waiting, and is
// not run by CI. It opens a SQLite ledger (bigledger -expired makes one),
// makes claims in -callers goroutines, -rate a second in all, for -idle
// (the baseline), then purges the expired records while the claims go on,
// and prints in one run: the purge's time and rate, the longest time one
// of its batches held the write lock (with -inproc), and the claims'
// median, 99th percentile and longest latency in the baseline and during
// the purge, with their ratios.
//
// The purge is agentctl ledger purge --yes in a child process, or with
// -inproc a second Store of this process (its own connections, as another
// process would have), whose debug log gives each batch's hold.
//
// -raw makes each claim a bare transaction on a connection of its own
// rather than a Store's Claim, and splits its time into the wait for the
// write lock (BEGIN IMMEDIATE, SQLite's busy handler included) and the
// commit (the WAL write, its fsync, and any automatic checkpoint the
// commit ran). Either way each claim notes whether a checkpoint ran while
// it did, read from the ledger's -shm file.
//
//	go run ./scripts/bigledger -ledger /tmp/exp.db -records 1000000 -expired 0.15
//	go run ./scripts/purgestall -ledger /tmp/exp.db -agentctl ./agentctl
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver of -raw

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func main() {
	var c config
	flag.StringVar(&c.path, "ledger", "", "the SQLite ledger `FILE` whose expired records the purge removes")
	flag.StringVar(&c.agentctl, "agentctl", "agentctl", "the agentctl `BINARY` that purges")
	flag.IntVar(&c.callers, "callers", 2, "how many goroutines make claims")
	flag.IntVar(&c.rate, "rate", 100, "claims a second, all callers together (a proxy at 100 calls/s)")
	flag.DurationVar(&c.idle, "idle", 10*time.Second, "how long to measure claims before the purge starts")
	flag.BoolVar(&c.inproc, "inproc", false, "purge with a second Store of this process, which reports each batch's hold, rather than agentctl")
	flag.BoolVar(&c.raw, "raw", false, "claim with bare transactions, timed as lock wait and commit, rather than Store.Claim")
	flag.Parse()
	if c.path == "" {
		fmt.Fprintln(os.Stderr, "purgestall: -ledger is required")
		os.Exit(2)
	}
	abs, err := filepath.Abs(c.path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "purgestall:", err)
		os.Exit(2)
	}
	c.path = abs
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "purgestall:", err)
		os.Exit(1)
	}
}

type config struct {
	path, agentctl string
	callers, rate  int
	idle           time.Duration
	inproc, raw    bool
}

// sample is one claim: when it began, how long it took, and for -raw the
// parts of that; ckpt is set when a checkpoint ran meanwhile.
type sample struct {
	at                 time.Time
	took, lock, commit time.Duration
	ckpt               bool
}

func run(c config) error {
	ctx := context.Background()
	claim, closeClaims, err := claimer(ctx, c)
	if err != nil {
		return err
	}
	defer closeClaims()
	shm := shmReader(c.path + "-shm")
	defer shm.close()
	var (
		mu      sync.Mutex
		samples []sample
		stop    atomic.Bool
		wg      sync.WaitGroup
		failed  atomic.Value
	)
	for w := range c.callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Duration(c.callers) * time.Second / time.Duration(c.rate))
			defer tick.Stop()
			for i := 0; !stop.Load(); i++ {
				<-tick.C
				key := fmt.Sprintf("stall-%d-%d-%d", os.Getpid(), w, i)
				before := shm.read()
				s, err := claim(key)
				s.ckpt = shm.read().checkpointedSince(before)
				if err != nil {
					failed.Store(err)
					return
				}
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(c.idle)
	purgeStart := time.Now()
	out, holds, err := purge(ctx, c)
	purgeTook := time.Since(purgeStart)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		return err
	}
	if e := failed.Load(); e != nil {
		return fmt.Errorf("a claim failed: %v", e)
	}
	var base, during []sample
	for _, s := range samples {
		switch {
		case s.at.Before(purgeStart):
			base = append(base, s)
		case s.at.Before(purgeStart.Add(purgeTook)):
			during = append(during, s)
		}
	}
	fmt.Printf("purge: %d records in %s, %.0f records/s\n", out, purgeTook.Round(time.Millisecond), float64(out)/purgeTook.Seconds())
	if len(holds) > 0 {
		slices.Sort(holds)
		var sum time.Duration
		for _, h := range holds {
			sum += h
		}
		fmt.Printf("purge batches: %d, write lock held: median %s, p99 %s, longest %s, %.0f%% of the purge\n",
			len(holds), holds[len(holds)/2].Round(time.Microsecond), pct(holds, 99).Round(time.Microsecond),
			holds[len(holds)-1].Round(time.Microsecond), 100*sum.Seconds()/purgeTook.Seconds())
	}
	kind := "claim+settle (Store)"
	if c.raw {
		kind = "claim (bare transaction)"
	}
	fmt.Printf("%s, %d caller(s), %d/s\n", kind, c.callers, c.rate)
	b, d := summarize("baseline", base, c.raw), summarize("during purge", during, c.raw)
	if b.n > 0 && d.n > 0 {
		fmt.Printf("ratios during/baseline: p99 %.1fx, longest %.1fx\n",
			d.p99.Seconds()/b.p99.Seconds(), d.longest.Seconds()/b.longest.Seconds())
	}
	return nil
}

// claimer returns the function one claim is: a Store's Claim and settle,
// or with -raw a bare transaction on a connection of its own.
func claimer(ctx context.Context, c config) (func(key string) (sample, error), func(), error) {
	if !c.raw {
		st, err := sqlite.Open(ctx, c.path, nil)
		if err != nil {
			return nil, nil, err
		}
		args := json.RawMessage(`{"amount":1}`)
		return func(key string) (sample, error) {
			id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: key}
			began := time.Now()
			cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Arguments: args, Owner: "stall"})
			if err == nil {
				_, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "stall", Fence: cl.Record.Fence, Result: args})
			}
			return sample{at: began, took: time.Since(began)}, err
		}, func() { _ = st.Close() }, nil
	}
	// The settings the Store's write connection has (see ledger/sqlite's
	// DSN), with the database's own autocheckpoint.
	q := url.Values{}
	q.Set("_busy_timeout", "5000")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite3", (&url.URL{Scheme: "file", Path: c.path, RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	// Connect now: the -shm file the claims read exists once a
	// connection has opened the ledger.
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	var mu sync.Mutex
	return func(key string) (sample, error) {
		// One claim at a time, as the Store's one write connection.
		mu.Lock()
		defer mu.Unlock()
		s := sample{at: time.Now()}
		conn, err := db.Conn(ctx)
		if err != nil {
			return s, err
		}
		defer func() { _ = conn.Close() }()
		t0 := time.Now()
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return s, err
		}
		t1 := time.Now()
		now := time.Now().UnixNano()
		if _, err := conn.ExecContext(ctx, `INSERT INTO records (tenant, layer, tool, key, fingerprint, state, reuse_policy, created_at, updated_at, expires_at)
			VALUES ('default', 'client', 'create_payment', ?, 'fp', 'SUCCEEDED', 'reexecute', ?, ?, ?)`, key, now, now, now+int64(24*time.Hour)); err != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			return s, err
		}
		t2 := time.Now()
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return s, err
		}
		t3 := time.Now()
		s.took, s.lock, s.commit = t3.Sub(s.at), t1.Sub(t0), t3.Sub(t2)
		return s, nil
	}, func() { _ = db.Close() }, nil
}

// purge removes the expired records and returns how many, and with
// -inproc each batch's hold of the write lock.
func purge(ctx context.Context, c config) (int, []time.Duration, error) {
	if !c.inproc {
		out, err := exec.Command(c.agentctl, "--ledger", c.path, "--json", "ledger", "purge", "--yes").Output()
		if err != nil {
			return 0, nil, fmt.Errorf("agentctl ledger purge: %v: %s", err, out)
		}
		var res struct{ Purged int }
		if err := json.Unmarshal(out, &res); err != nil {
			return 0, nil, fmt.Errorf("agentctl ledger purge printed %q: %v", out, err)
		}
		return res.Purged, nil, nil
	}
	h := &holdLog{}
	st, err := sqlite.Open(ctx, c.path, &sqlite.Options{Logger: slog.New(h)})
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = st.Close() }()
	n, err := st.Purge(ctx, ledger.PurgeRequest{ExpiredBy: time.Now()})
	return n, h.holds, err
}

// holdLog collects the "held" attribute of the store's purge batch log.
type holdLog struct {
	mu    sync.Mutex
	holds []time.Duration
}

func (h *holdLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *holdLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *holdLog) WithGroup(string) slog.Handler            { return h }
func (h *holdLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "held" && a.Value.Kind() == slog.KindDuration {
			h.mu.Lock()
			h.holds = append(h.holds, a.Value.Duration())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

type summary struct {
	n            int
	p99, longest time.Duration
}

func summarize(name string, s []sample, raw bool) summary {
	if len(s) == 0 {
		fmt.Printf("  %-13s no calls\n", name+":")
		return summary{}
	}
	took := make([]time.Duration, len(s))
	over, overCkpt, ckpt := 0, 0, 0
	var lock, commit []time.Duration
	for i, x := range s {
		took[i] = x.took
		if x.ckpt {
			ckpt++
		}
		if x.took > 100*time.Millisecond {
			over++
			if x.ckpt {
				overCkpt++
			}
		}
		lock, commit = append(lock, x.lock), append(commit, x.commit)
	}
	slices.Sort(took)
	r := summary{n: len(s), p99: pct(took, 99), longest: took[len(took)-1]}
	fmt.Printf("  %-13s %d calls, median %s, p99 %s, longest %s; %d over 100 ms (%d of them beside a checkpoint); %d beside a checkpoint in all\n",
		name+":", r.n, took[len(took)/2].Round(time.Microsecond), r.p99.Round(time.Microsecond), r.longest.Round(time.Millisecond), over, overCkpt, ckpt)
	if raw {
		slices.Sort(lock)
		slices.Sort(commit)
		fmt.Printf("  %-13s lock wait p99 %s, longest %s; commit p99 %s, longest %s\n", "",
			pct(lock, 99).Round(time.Microsecond), lock[len(lock)-1].Round(time.Millisecond),
			pct(commit, 99).Round(time.Microsecond), commit[len(commit)-1].Round(time.Millisecond))
	}
	return r
}

// pct is the p-th percentile of sorted d.
func pct(d []time.Duration, p int) time.Duration { return d[len(d)*p/100] }

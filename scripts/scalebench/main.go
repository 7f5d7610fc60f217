// Command scalebench times what a person, the model and a call do around
// the ledger as it grows, and writes the section "As the ledger grows" of
// BENCHMARKS.md (replacing it when present):
//
//	go run ./scripts/scalebench                                 # 10,000 and 1,000,000 records, SQLite and PostgreSQL
//	go run ./scripts/scalebench -sizes 10000,1000000,10000000   # and 10 million, by hand (hours)
//	go run ./scripts/scalebench -smoke -out /tmp/scale.md       # CI: the smallest size, each operation once
//
// For each store it builds a ledger of each size with package bulk (five
// records through the store's own write path, the rest copies of them in
// SQL: one in 100 UNKNOWN, the oldest tenth past its retention), then
// times, against agentctl built from this checkout, one size after the
// other within each repetition (so that a busier moment of a shared
// machine weighs on every size alike): agentctl call (a new
// key, its replay, an unkeyed re-plan) against the payments example over
// streamable HTTP; ledger show KEY with and without --tool; ledger
// reconcile of an UNKNOWN record; ledger approve and deny of calls a
// policy queued; ledger list --session; the model's ledger_status (agentctl
// serve over stdio); the console's records page, UNKNOWN page and a record
// page (agentctl ui over HTTP), with their sizes; ledger export (records/s
// and the peak RSS) and ledger purge of the expired records. Each time is
// the median of -reps runs (export and purge run once, at the end), and
// is compared with its time at the smallest size of the same run. It also reads the
// bytes per record and the size of each index.
//
// PostgreSQL needs -dsn (default MCPLEDGER_TEST_POSTGRES); each size gets
// a schema of its own, scalebench_SIZE, dropped before and after. Without
// a DSN the PostgreSQL store is left out and the section says so. Run it
// from the repository root: it builds agentctl and examples/payments.
//
// -smoke runs the smallest size only, each operation once, and fails when
// one of them does not do what it should; it asserts no time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is what the flags set.
type config struct {
	sizes  []int
	stores []string
	dsn    string
	out    string
	smoke  bool
	reps   int
	dir    string
	keep   bool
}

func main() {
	var c config
	sizes := flag.String("sizes", "10000,1000000", "the ledger sizes, in records, comma-separated; the first is what the others are compared with")
	stores := flag.String("stores", "sqlite,postgres", "the stores, comma-separated: sqlite, postgres")
	flag.StringVar(&c.dsn, "dsn", os.Getenv("MCPLEDGER_TEST_POSTGRES"), "the PostgreSQL `URL` (each size uses a schema of its own in it)")
	flag.StringVar(&c.out, "out", "BENCHMARKS.md", "the `FILE` whose section \"As the ledger grows\" is written")
	flag.BoolVar(&c.smoke, "smoke", false, "the smallest size only, each operation once, checked; no times asserted")
	flag.IntVar(&c.reps, "reps", 7, "how many times each operation runs (export and purge: once); the median is shown")
	flag.StringVar(&c.dir, "dir", "", "the work `DIR` for binaries and SQLite ledgers (default: a new temporary one)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work folder, the ledgers and PostgreSQL schemas after the run")
	flag.Parse()
	var err error
	if c.sizes, err = parseSizes(*sizes); err == nil {
		c.stores, err = parseStores(*stores)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(2)
	}
	if c.smoke {
		c.sizes, c.reps = c.sizes[:1], 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			return nil, fmt.Errorf("-sizes %q: %q is not a count of at least 1000 records; give counts such as 10000,1000000", s, f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func parseStores(s string) ([]string, error) {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f != "sqlite" && f != "postgres" {
			return nil, fmt.Errorf("-stores %q: %q is neither sqlite nor postgres", s, f)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scalebench: "+format+"\n", args...)
}

func run(ctx context.Context, c config) error {
	if _, err := os.Stat("go.work"); err != nil {
		return errors.New("run it from the repository root (where go.work is): it builds agentctl and examples/payments from this checkout")
	}
	dir := c.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "scalebench-")
		if err != nil {
			return err
		}
		dir = d
	}
	if !c.keep {
		defer func() { _ = os.RemoveAll(dir) }() // scratch; a leftover is only disk space
	}
	b, err := build(ctx, dir)
	if err != nil {
		return err
	}
	pay, err := startPayments(ctx, dir, b.payments)
	if err != nil {
		return err
	}
	defer func() { _ = pay.stop() }() // the figures are taken; how it ends adds nothing
	r := report{cfg: c, started: time.Now()}
	for _, store := range c.stores {
		if store == "postgres" && c.dsn == "" {
			r.notes = append(r.notes, "PostgreSQL was left out: no -dsn and no MCPLEDGER_TEST_POSTGRES.")
			continue
		}
		res, err := runStore(ctx, c, dir, b, pay.url, store)
		if err != nil {
			return fmt.Errorf("%s, %w", storeTitle(store), err)
		}
		r.results = append(r.results, res...)
	}
	section := r.render()
	doc, err := os.ReadFile(c.out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(c.out, []byte(splice(string(doc), section)), 0o644); err != nil {
		return err
	}
	logf("wrote %q of %s", sectionHead, c.out)
	return nil
}

// binaries are the programs built for the run.
type binaries struct{ agentctl, payments string }

func build(ctx context.Context, dir string) (binaries, error) {
	b := binaries{agentctl: filepath.Join(dir, "bin", "agentctl"), payments: filepath.Join(dir, "bin", "payments")}
	for _, t := range []struct{ out, pkg string }{{b.agentctl, "./cmd/agentctl"}, {b.payments, "./examples/payments"}} {
		logf("go build -o %s %s", t.out, t.pkg)
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", t.out, t.pkg).CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %v\n%s", t.pkg, err, out)
		}
	}
	return b, nil
}

// ledgerAt is the ledger of store at size n: a SQLite file in dir, or a
// schema of its own in the PostgreSQL database.
func ledgerAt(c config, dir, store string, n int) (string, error) {
	if store == "sqlite" {
		return filepath.Join(dir, fmt.Sprintf("ledger-%d.db", n)), nil
	}
	u, err := url.Parse(c.dsn)
	if err != nil {
		return "", fmt.Errorf("-dsn: %v; give a postgres:// URL", err)
	}
	q := u.Query()
	q.Set("search_path", schemaOf(n))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func schemaOf(n int) string { return fmt.Sprintf("scalebench_%d", n) }

func storeTitle(store string) string {
	if store == "sqlite" {
		return "SQLite"
	}
	return "PostgreSQL"
}

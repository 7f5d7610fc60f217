// Command loadbench puts the payments example under load six ways and
// writes the "Under load" section of BENCHMARKS.md: the bare upstream (the
// example without its guard), the guarded upstream, the guarded upstream
// through agentctl proxy on a SQLite ledger, the bare upstream through the
// proxy on SQLite (the proxy as the only guard), the guarded upstream
// through the proxy on PostgreSQL, and through two proxies sharing one
// PostgreSQL ledger.
//
//	go run ./scripts/loadbench                       # 12 s per contender and scenario
//	go run ./scripts/loadbench -duration 3s -o /tmp/load.md
//	go run ./scripts/loadbench -profile /tmp/prof    # and CPU, block, mutex and heap profiles
//
// The clients are go-sdk streamable-HTTP sessions making create_payment
// calls, each with a new key (and, in the hot scenario, a quarter of them
// on one hot key), closed loop or at a fixed rate. After the run the
// payments table is read for every slice's keys: each key answered with a
// result must have paid exactly once and no other key at all, or the run
// fails and writes nothing.
//
// It builds agentctl and the example from this checkout, so run it from
// the repository root. The PostgreSQL contenders need
// MCPLEDGER_TEST_POSTGRES; without it they are left out and the section
// says so.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is what the flags set.
type config struct {
	out        string
	duration   time.Duration // per contender and scenario, over all rounds
	rounds     int
	clients    int
	hotClients int
	hot        int
	rate       float64
	settle     time.Duration
	which      string // scenarios to run, comma-separated
	contenders string // contenders to run, comma-separated
	dir        string
	profile    string
	profileOf  string // the scenario profiled
	pg         string
}

func (c config) describe() string {
	return fmt.Sprintf("%s per contender and scenario in %d rounds", c.duration, c.rounds)
}

// scenario is one shape of load.
type scenario struct {
	name, title string
	clients     int
	hot         int
	rate        float64
}

func (c config) scenarios() []scenario {
	all := []scenario{
		{name: "closed", title: fmt.Sprintf("%d clients, closed loop, a new key per call", c.clients), clients: c.clients},
		{name: "hot", title: fmt.Sprintf("%d clients, closed loop, %d of them on one hot key", c.hotClients, c.hot), clients: c.hotClients, hot: c.hot},
		{name: "rate", title: fmt.Sprintf("%.0f calls/s over %d clients, a new key per call", c.rate, c.clients), clients: c.clients, rate: c.rate},
	}
	want := strings.Split(c.which, ",")
	return slices.DeleteFunc(all, func(s scenario) bool { return !slices.Contains(want, s.name) })
}

// contender is one way of serving the calls.
type contender struct {
	name, title string
	procs       []*proc
	upstream    *proc  // behind a proxy, the server it relays to
	db          string // the payments database its calls pay into
}

func main() {
	var c config
	flag.StringVar(&c.out, "o", "BENCHMARKS.md", "the file whose \"Under load\" section is written (the rest is kept)")
	flag.DurationVar(&c.duration, "duration", 12*time.Second, "load per contender and scenario, split over the rounds")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds: each gives every contender one slice, the order rotating")
	flag.IntVar(&c.clients, "clients", 100, "client sessions of the closed-loop and fixed-rate scenarios")
	flag.IntVar(&c.hotClients, "hot-clients", 200, "client sessions of the hot-key scenario")
	flag.IntVar(&c.hot, "hot", 50, "of the hot-key scenario's clients, how many call the one hot key")
	flag.Float64Var(&c.rate, "rate", 150, "calls per second of the fixed-rate scenario")
	flag.DurationVar(&c.settle, "settle", 30*time.Second, "wait after the last call before the RSS is read again and the payments counted")
	flag.StringVar(&c.which, "scenarios", "closed,hot,rate", "scenarios to run: closed, hot, rate")
	flag.StringVar(&c.contenders, "contenders", "bare,guarded,proxy-sqlite,proxy-bare,proxy-pg,proxy-pg-pair", "contenders to run")
	flag.StringVar(&c.dir, "dir", "", "folder for the databases, binaries and logs (default: a new temporary one, removed after a run that passed)")
	flag.StringVar(&c.profile, "profile", "", "build the servers with pprof and write each one's CPU, block, mutex, goroutine and heap profiles (see -profile-scenario) to this folder")
	flag.StringVar(&c.profileOf, "profile-scenario", "closed", "with -profile: the scenario whose first slice of each contender is profiled")
	flag.Parse()
	c.pg = os.Getenv("MCPLEDGER_TEST_POSTGRES")
	if err := c.check(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := execute(ctx, c, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func (c config) check() error {
	switch {
	case c.rounds < 1 || c.duration <= 0:
		return errors.New("loadbench: -rounds must be at least 1 and -duration positive")
	case c.clients < 1 || c.hotClients < 1 || c.hot < 0 || c.hot >= c.hotClients:
		return errors.New("loadbench: -clients and -hot-clients must be at least 1, and -hot below -hot-clients")
	case c.rate <= 0:
		return errors.New("loadbench: -rate must be positive")
	case len(c.scenarios()) == 0:
		return fmt.Errorf("loadbench: -scenarios %q names none of closed, hot, rate", c.which)
	}
	if _, err := os.Stat(filepath.Join("cmd", "agentctl")); err != nil {
		return errors.New("loadbench: cmd/agentctl not found: run from the repository root (go run ./scripts/loadbench)")
	}
	return nil
}

// logLine writes progress to logw (stderr). Its error is dropped: the
// progress lines only tell a person what runs, and the report has its own
// writes.
func logLine(logw io.Writer, format string, args ...any) { _, _ = fmt.Fprintf(logw, format, args...) }

// execute runs the whole benchmark and writes the report.
func execute(ctx context.Context, c config, logw io.Writer) (err error) {
	dir := c.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "loadbench-"); err != nil {
			return fmt.Errorf("loadbench: %w", err)
		}
		defer func() {
			if err == nil {
				_ = os.RemoveAll(dir) // a temporary folder: best effort
				return
			}
			logLine(logw, "loadbench: the run's databases and logs are in %s\n", dir)
		}()
	}
	logf := func(format string, args ...any) { logLine(logw, "loadbench: "+format+"\n", args...) }
	bins, err := build(ctx, dir, c.profile != "", logf)
	if err != nil {
		return err
	}
	order, notes, err := startContenders(ctx, c, dir, bins, logf)
	defer func() {
		for _, ct := range order {
			for _, p := range ct.procs {
				if err := p.stop(); err != nil {
					logf("%s did not stop cleanly (%v); see %s", p.name, err, p.log)
				}
			}
		}
	}()
	if err != nil {
		return err
	}
	turns := active(order)
	r := run{machine: machine(), cfg: c, order: turns, notes: notes, loadBefore: loadAverage(), cores: runtime.NumCPU(),
		results: map[string]map[string]outcome{}, after: map[string]int64{}, afterFile: map[string]int64{}}
	id := runID()
	hc := newHTTPClient(max(c.clients, c.hotClients) + 16)
	per := c.duration / time.Duration(c.rounds)
	for _, sc := range c.scenarios() {
		rounds := map[string][]sliceResult{}
		var prof *profiler
		if c.profile != "" && sc.name == c.profileOf {
			prof = &profiler{dir: c.profile}
		}
		for round := range c.rounds {
			for k := range turns {
				ct := turns[(k+round)%len(turns)]
				s := slice{urls: urlsOf(ct), clients: sc.clients, hot: sc.hot, rate: sc.rate, duration: per,
					prefix: keyPrefix(id, sc.name, ct.name, round), procs: ct.procs, upstream: ct.upstream}
				logf("%s, round %d/%d: %s (load average %.2f)", sc.name, round+1, c.rounds, ct.title, loadAverage())
				stopProf := prof.start(ctx, ct, per, logf)
				res, err := s.run(ctx, hc)
				stopProf()
				if err != nil {
					return err
				}
				r.loads = append(r.loads, res.load)
				rounds[ct.name] = append(rounds[ct.name], res)
			}
		}
		r.results[sc.name] = map[string]outcome{}
		for name, rs := range rounds {
			r.results[sc.name][name] = pool(rs)
		}
	}
	logf("load done; waiting %s before reading RSS and counting payments", c.settle)
	if err := wait(ctx, c.settle); err != nil {
		return err
	}
	for _, ct := range order {
		for _, p := range ct.procs {
			if v, err := p.rss(); err == nil {
				r.after[ct.name] = max(r.after[ct.name], v)
			}
			if v, err := p.fileRSS(); err == nil {
				r.afterFile[ct.name] = max(r.afterFile[ct.name], v)
			}
			if c.profile != "" && p.pprof != "" {
				// What the process still holds once the load is over.
				for what, q := range map[string]string{"after.goroutine.txt": "goroutine?debug=1", "after.heap.pb.gz": "heap?gc=1", "after.memstats.txt": "heap?debug=1"} {
					if err := download(ctx, p.pprof+q, filepath.Join(c.profile, p.name+"."+what)); err != nil {
						logf("profile: %s %s: %v", p.name, what, err)
					}
				}
			}
		}
	}
	if r.checks, err = countPayments(ctx, id, c, turns, r.results); err != nil {
		return err
	}
	section := render(r)
	var bad []string
	for _, ch := range r.checks {
		if !ch.equal() {
			bad = append(bad, fmt.Sprintf("%s/%s: %s", ch.contender, ch.scenario, ch.detail()))
		}
	}
	if len(bad) > 0 {
		logLine(logw, "%s", section)
		more := ""
		if len(bad) > 2 {
			bad, more = bad[:2], fmt.Sprintf("; %d more in the table above", len(bad)-2)
		}
		return fmt.Errorf("loadbench: payments and answers differ (%s%s); nothing written: see the servers' logs in %s", strings.Join(bad, "; "), more, dir)
	}
	doc, err := os.ReadFile(c.out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("loadbench: %w", err)
	}
	if err := os.WriteFile(c.out, []byte(splice(string(doc), section)), 0o644); err != nil {
		return fmt.Errorf("loadbench: %w", err)
	}
	logf("wrote the %q section of %s", sectionHead, c.out)
	return nil
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// binaries are the programs built for the run.
type binaries struct{ agentctl, payments string }

func build(ctx context.Context, dir string, profiled bool, logf func(string, ...any)) (binaries, error) {
	b := binaries{agentctl: filepath.Join(dir, "bin", "agentctl"), payments: filepath.Join(dir, "bin", "payments")}
	for _, t := range []struct{ out, pkg string }{{b.agentctl, "./cmd/agentctl"}, {b.payments, "./examples/payments"}} {
		args := []string{"build", "-o", t.out}
		if profiled {
			args = append(args, "-tags", "pprof")
		}
		logf("go %s", strings.Join(append(args, t.pkg), " "))
		cmd := exec.CommandContext(ctx, "go", append(args, t.pkg)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("loadbench: go build %s: %v\n%s", t.pkg, err, out)
		}
	}
	return b, nil
}

// policy lets create_payment through the proxy without asking: the load
// has no one at a terminal.
const policy = `{"version": 1, "rules": [{"tool": "create_payment", "action": "allow", "note": "the load benchmark pays without asking"}]}`

func startContenders(ctx context.Context, c config, dir string, b binaries, logf func(string, ...any)) ([]contender, []string, error) {
	want := strings.Split(c.contenders, ",")
	has := func(n string) bool { return slices.Contains(want, n) }
	var (
		order []contender
		notes []string
	)
	policyFile := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
		return nil, nil, fmt.Errorf("loadbench: %w", err)
	}
	env := func() []string {
		if c.profile == "" {
			return nil
		}
		return []string{"MCPLEDGER_PPROF=127.0.0.1:0"} // internal/loadprofile.Env
	}
	payments := func(name string, extra ...string) (*proc, string, error) {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, "", fmt.Errorf("loadbench: %w", err)
		}
		db := filepath.Join(d, "payments.db")
		p, err := start(ctx, name, dir, env(), b.payments, append([]string{"-db", db, "-http", "127.0.0.1:0"}, extra...)...)
		return p, db, err
	}
	proxyTo := func(name, ledger, url string) (*proc, error) {
		return start(ctx, name, dir, env(), b.agentctl, "--ledger", ledger, "proxy",
			"--listen", "127.0.0.1:0", "--policy", policyFile, "--url", url)
	}
	var bare *contender
	if has("bare") || has("proxy-bare") {
		p, db, err := payments("bare", "-unguarded")
		if err != nil {
			return order, nil, err
		}
		bare = &contender{name: "bare", title: "bare upstream (no guard)", procs: []*proc{p}, db: db}
		if !has("bare") {
			// Only the upstream of proxy-bare; no slices of its own.
			bare.name = ""
		}
		order = append(order, *bare)
	}
	needUpstream := slices.ContainsFunc(want, func(n string) bool { return n != "bare" && n != "proxy-bare" && n != "" })
	if !needUpstream {
		if has("proxy-bare") {
			var err error
			if order, err = withBareProxy(order, bare, proxyTo, dir); err != nil {
				return order, nil, err
			}
		}
		return order, notes, nil
	}
	up, upDB, err := payments("guarded")
	if err != nil {
		return order, nil, err
	}
	guarded := contender{name: "guarded", title: "guarded upstream", procs: []*proc{up}, db: upDB}
	if !has("guarded") {
		// Still the proxies' upstream; it just has no slices of its own.
		guarded.name = ""
	}
	order = append(order, guarded)
	proxy := func(name, ledger string) (*proc, error) { return proxyTo(name, ledger, up.url) }
	if has("proxy-sqlite") {
		p, err := proxy("proxy-sqlite", filepath.Join(dir, "proxy.ledger.db"))
		if err != nil {
			return order, nil, err
		}
		order = append(order, contender{name: "proxy-sqlite", title: "proxy, SQLite ledger", procs: []*proc{p}, upstream: up, db: upDB})
	}
	if has("proxy-bare") {
		if order, err = withBareProxy(order, bare, proxyTo, dir); err != nil {
			return order, nil, err
		}
	}
	pgWanted := has("proxy-pg") || has("proxy-pg-pair")
	if pgWanted && c.pg == "" {
		notes = append(notes, "The PostgreSQL contenders were not run: MCPLEDGER_TEST_POSTGRES is unset.")
	}
	if has("proxy-pg") && c.pg != "" {
		p, err := proxy("proxy-pg", c.pg)
		if err != nil {
			return order, nil, err
		}
		order = append(order, contender{name: "proxy-pg", title: "proxy, PostgreSQL ledger", procs: []*proc{p}, upstream: up, db: upDB})
	}
	if has("proxy-pg-pair") && c.pg != "" {
		p1, err := proxy("proxy-pg-pair-1", c.pg)
		if err != nil {
			return order, nil, err
		}
		order = append(order, contender{name: "proxy-pg-pair", title: "two proxies, one PostgreSQL ledger", procs: []*proc{p1}, upstream: up, db: upDB})
		p2, err := proxy("proxy-pg-pair-2", c.pg)
		if err != nil {
			return order, nil, err
		}
		order[len(order)-1].procs = append(order[len(order)-1].procs, p2)
	}
	for _, ct := range order {
		for _, p := range ct.procs {
			logf("%s: %s (pid %d)", p.name, p.url, p.cmd.Process.Pid)
		}
	}
	return order, notes, nil
}

// bareProxyTitle is the proxy in front of the bare upstream: the proxy as
// the only guard, the other way to protect a server than its own guard.
const bareProxyTitle = "proxy, SQLite ledger, over the bare upstream"

// withBareProxy starts the proxy in front of the bare upstream on a SQLite
// ledger of its own and adds it to order.
func withBareProxy(order []contender, bare *contender, proxyTo func(name, ledger, url string) (*proc, error), dir string) ([]contender, error) {
	p, err := proxyTo("proxy-bare", filepath.Join(dir, "proxy-bare.ledger.db"), bare.procs[0].url)
	if err != nil {
		return order, err
	}
	return append(order, contender{name: "proxy-bare", title: bareProxyTitle, procs: []*proc{p}, upstream: bare.procs[0], db: bare.db}), nil
}

// active leaves out an upstream that only serves the proxies.
func active(order []contender) []contender {
	return slices.DeleteFunc(slices.Clone(order), func(c contender) bool { return c.name == "" })
}

func urlsOf(c contender) []string {
	u := make([]string, len(c.procs))
	for i, p := range c.procs {
		u[i] = p.url
	}
	return u
}

// keyPrefix starts the keys of one slice: the run, the scenario, the
// contender and the round, so the payments of each slice can be read back.
func keyPrefix(id, scen, who string, round int) string {
	return fmt.Sprintf("lb%s.%s.%s.r%d.", id, scen, who, round)
}

func runID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func machine() string {
	model := runtime.GOARCH
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	gover := runtime.Version()
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		gover = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("Machine: %s, %d cores, %s, %s/%s, %s", model, runtime.NumCPU(), gover, runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

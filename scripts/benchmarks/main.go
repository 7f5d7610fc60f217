// Command benchmarks runs the project's Go benchmarks and regenerates
// BENCHMARKS.md: ratios first (each against its floor, measured in the same
// run), absolute times second, and the machine they were taken on.
//
//	go run ./scripts/benchmarks            # writes BENCHMARKS.md
//	go run ./scripts/benchmarks -count 3 -o /tmp/b.md
//	go run ./scripts/benchmarks -only '^SQLite ledger$'   # those rows only
//
// Each round also runs the module scripts/peer/dbos, which sets the client
// beside DBOS Transact Go on the same call. A section of the output file
// headed "## Where the time goes" is written by hand (profiles read by a
// person) and kept, with everything after it, when the file is rewritten.
//
// PostgreSQL figures need MCPLEDGER_TEST_POSTGRES (see README); without it
// that section says it was not run.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// group is one `go test -bench` run.
type group struct {
	title     string
	pkg       string
	bench     string
	benchtime string
	needsPG   bool
	// dir, when set, is the module the package is in (a module of its
	// own under scripts/, so the library's go.mod never requires what it
	// measures against), and prefix names its figures.
	dir, prefix string
}

// ratio compares two benchmarks of one run.
type ratio struct {
	name, num, den, target string
	// throughput compares operations per second (den/num) instead of time.
	throughput bool
	// metric, when set, names a ratio the benchmark num reports itself
	// (measured interleaved with its floor in one loop).
	metric string
	// sub and denSub, when set, are subtracted from num and den within
	// the round: (num − sub) / den is an overhead in units of a floor,
	// (num − sub) / (den − denSub) one overhead against another's.
	sub, denSub string
}

// peerDir is the module that measures the client beside DBOS Transact Go.
const peerDir = "scripts/peer/dbos"

var groups = []group{
	{"SQLite ledger", "./ledger/sqlite/", "^Benchmark(ClaimComplete|RawFloor|FsyncFloor|ClaimCompleteParallel|ClaimCompleteVsFloor|Replay)$", "2s", false, "", ""},
	{"PostgreSQL ledger", "./ledger/postgres/", "^Benchmark(ClaimComplete|RawFloor|ClaimCompleteParallel|ClaimCompleteVsFloor)$", "2s", true, "", ""},
	{"Client wrapper", "./client/", "^Benchmark(CallTool(Bare|Ledger|Replay|ReplayMany|ByHand|Durable|DurableWriteBehind)|StoreClaimComplete)$", "2s", false, "", ""},
	// The peer's PostgreSQL contenders skip themselves when
	// MCPLEDGER_TEST_POSTGRES is unset; the rest still run.
	{"Beside DBOS Transact Go", ".", "^BenchmarkInterleaved(SQLite|Postgres)$", "2s", false, peerDir, "peer"},
	{"Client wrapper, interleaved", "./client/", "^BenchmarkWrapperOverhead$", "3000x", false, "", ""},
	{"Client middleware, interleaved", "./client/", "^BenchmarkMiddleware(Overhead|Replay)$", "2s", false, "", ""},
	{"Server middleware", "./server/", "^Benchmark(GuardedCall|UnguardedCall|GuardedReplay)$", "2s", false, "", ""},
}

var ratios = []ratio{
	{name: "SQLite claim+complete / raw INSERT+UPDATE floor (durable)", num: "sqlite/ClaimComplete", den: "sqlite/RawFloor", target: "<= 1.2"},
	{name: "SQLite claim+complete / raw floor, interleaved in one loop", num: "sqlite/ClaimCompleteVsFloor", target: "<= 1.2", metric: "store/floor"},
	{name: "SQLite parallel (64 goroutines) / serial throughput", num: "sqlite/ClaimCompleteParallel", den: "sqlite/ClaimComplete", target: ">= 4", throughput: true},
	{name: "PostgreSQL claim+complete / raw INSERT+UPDATE floor (separate runs)", num: "postgres/ClaimComplete/default", den: "postgres/RawFloor", target: "<= 1.3"},
	{name: "PostgreSQL claim+complete / raw floor, interleaved in one loop", num: "postgres/ClaimCompleteVsFloor/durable", target: "<= 1.3", metric: "store/floor"},
	{name: "PostgreSQL parallel (64 goroutines) / serial throughput", num: "postgres/ClaimCompleteParallel/default", den: "postgres/ClaimComplete/default", target: ">= 4", throughput: true},
	{name: "Client wrapper / bare go-sdk call", num: "client/CallToolLedger", den: "client/CallToolBare"},
	{name: "Client wrapper / the same work by hand (claim, bare call, complete)", num: "client/CallToolLedger", den: "client/CallToolByHand"},
	{name: "Client replay / bare go-sdk call", num: "client/CallToolReplay", den: "client/CallToolBare", target: "<= 0.1"},
	{name: "Client middleware / bare go-sdk session, interleaved in one loop", num: "client/MiddlewareOverhead", metric: "middleware/bare"},
	{name: "Client middleware / wrapper, interleaved in one loop", num: "client/MiddlewareOverhead", metric: "middleware/wrapper"},
	{name: "Client middleware replay / wrapper replay, interleaved in one loop", num: "client/MiddlewareReplay", metric: "middleware/wrapper"},
	{name: "Server guarded / unguarded call", num: "server/GuardedCall", den: "server/UnguardedCall"},
	{name: "Server replay / unguarded call", num: "server/GuardedReplay", den: "server/UnguardedCall"},
	{name: "(CallToolDurableWriteBehind − CallToolBare) / FsyncFloor (separate loops)", num: "client/CallToolDurableWriteBehind", sub: "client/CallToolBare", den: "sqlite/FsyncFloor", target: "<= 1.5"},
	{name: "(CallToolDurable − CallToolBare) / FsyncFloor (separate loops)", num: "client/CallToolDurable", sub: "client/CallToolBare", den: "sqlite/FsyncFloor", target: "<= 2.5"},
}

// peerRatios set mcpledger against DBOS Transact Go: every figure comes
// from one loop that runs the contenders turn about (the peer module's
// interleaved benchmarks), so both sides of a ratio met the same load.
var peerRatios = []ratio{
	{name: "(client SQLite write-behind − bare) / fsync floor, in one loop with the other contenders", num: sq + "first writebehind-ns/op", sub: sq + "first bare-ns/op", den: sq + "first fsyncfloor-ns/op", target: "<= 1.5"},
	{name: "(client SQLite FULL − bare) / fsync floor, in one loop with the other contenders", num: sq + "first full-ns/op", sub: sq + "first bare-ns/op", den: sq + "first fsyncfloor-ns/op", target: "<= 2.5"},
	{name: "first-call overhead over bare, client SQLite FULL / DBOS SQLite", num: sq + "first full-ns/op", sub: sq + "first bare-ns/op", den: sq + "first dbos-ns/op", denSub: sq + "first bare-ns/op", target: "<= 0.5"},
	{name: "first-call overhead over bare, client SQLite write-behind / DBOS SQLite", num: sq + "first writebehind-ns/op", sub: sq + "first bare-ns/op", den: sq + "first dbos-ns/op", denSub: sq + "first bare-ns/op", target: "<= 0.3"},
	{name: "first-call overhead over bare, client PostgreSQL / DBOS PostgreSQL", num: pg + "first postgres-ns/op", sub: pg + "first bare-ns/op", den: pg + "first dbos-ns/op", denSub: pg + "first bare-ns/op"},
	{name: "replay, client SQLite FULL / DBOS SQLite", num: sq + "replay full-ns/op", den: sq + "replay dbos-ns/op", target: "<= 0.1"},
	{name: "replay, 64 callers, client SQLite FULL / DBOS SQLite", num: sq + "replay_64way full-ns/op", den: sq + "replay_64way dbos-ns/op", target: "<= 0.1"},
	{name: "replay, client PostgreSQL / DBOS PostgreSQL", num: pg + "replay postgres-ns/op", den: pg + "replay dbos-ns/op", target: "<= 0.1"},
	{name: "replay, 64 callers, client PostgreSQL / DBOS PostgreSQL", num: pg + "replay_64way postgres-ns/op", den: pg + "replay_64way dbos-ns/op", target: "<= 0.1"},
	{name: "64-caller first-call throughput, client SQLite FULL / DBOS SQLite", num: sq + "first_64way full-ns/op", den: sq + "first_64way dbos-ns/op", target: ">= 3", throughput: true},
	{name: "64-caller first-call throughput, client SQLite write-behind / DBOS SQLite", num: sq + "first_64way writebehind-ns/op", den: sq + "first_64way dbos-ns/op", throughput: true},
	{name: "64-caller first-call throughput, client PostgreSQL / DBOS PostgreSQL", num: pg + "first_64way postgres-ns/op", den: pg + "first_64way dbos-ns/op", target: ">= 3", throughput: true},
	{name: "client PostgreSQL, 64 callers / one caller, throughput", num: pg + "first_64way postgres-ns/op", den: pg + "first postgres-ns/op", throughput: true},
	{name: "bare go-sdk call, 64 callers / one caller, throughput (what the call itself allows here)", num: sq + "first_64way bare-ns/op", den: sq + "first bare-ns/op", throughput: true},
}

// The peer module's interleaved benchmarks, each with sub-benchmarks
// first, first_64way, replay and replay_64way.
const (
	sq = "peer/InterleavedSQLite/"
	pg = "peer/InterleavedPostgres/"
)

var (
	line   = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)
	custom = regexp.MustCompile(`([\d.]+) (\S+/\S+)`)
)

func main() {
	count := flag.Int("count", 5, "rounds: each benchmark runs once per round, and the median over rounds is reported")
	out := flag.String("o", "BENCHMARKS.md", "output file")
	benchtime := flag.String("benchtime", "", "overrides each group's time-based -benchtime (e.g. 200ms for a quick try; counts such as 3000x stay)")
	only := flag.String("only", "", "runs only the groups whose title matches this regexp (e.g. '^SQLite ledger$') and replaces only the rows they measure in the -o file, which must exist; a note below the machine's line says so")
	flag.Parse()
	run := groups
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchmarks: -only %q: %v\n", *only, err)
			os.Exit(2)
		}
		run = nil
		for _, g := range groups {
			if re.MatchString(g.title) {
				run = append(run, g)
			}
		}
		if len(run) == 0 {
			fmt.Fprintf(os.Stderr, "benchmarks: -only %q matches no group; the groups are: %s\n", *only, strings.Join(titles(groups), "; "))
			os.Exit(2)
		}
	}
	load := loadAverage()
	if _, err := os.Stat(filepath.Join(peerDir, "go.mod")); err != nil {
		fmt.Fprintf(os.Stderr, "benchmarks: %s/go.mod not found: run from the repository root (go run ./scripts/benchmarks)\n", peerDir)
		os.Exit(2)
	}

	// Rounds: every group once per round, so that the two sides of each
	// ratio are measured minutes apart at most, and each ratio is taken
	// within a round before the median over rounds is.
	results := map[string][]float64{} // "pkg/Name" -> ns/op of each round
	metrics := map[string][]float64{} // "pkg/Name unit" -> a reported metric of each round
	var notes []string
	for _, g := range groups {
		if g.needsPG && os.Getenv("MCPLEDGER_TEST_POSTGRES") == "" {
			notes = append(notes, g.title+": not run (MCPLEDGER_TEST_POSTGRES is unset)")
		}
	}
	if os.Getenv("MCPLEDGER_TEST_POSTGRES") == "" {
		notes = append(notes, "Beside DBOS Transact Go, PostgreSQL: not run (MCPLEDGER_TEST_POSTGRES is unset)")
	}
	for round := 1; round <= *count; round++ {
		for _, g := range run {
			if g.needsPG && os.Getenv("MCPLEDGER_TEST_POSTGRES") == "" {
				continue
			}
			fmt.Fprintf(os.Stderr, "benchmarks: round %d/%d: %s (%s)\n", round, *count, g.title, filepath.Join(g.dir, g.pkg))
			bt := g.benchtime
			if *benchtime != "" && !strings.HasSuffix(bt, "x") {
				bt = *benchtime
			}
			raw, err := benchOnce(g, bt)
			if err != nil {
				// A round's figures must be whole: a group that fails (a
				// timeout on a machine others are loading, say) runs once
				// more in the same round before the run gives up.
				fmt.Fprintf(os.Stderr, "benchmarks: %s: %v\n%s\nbenchmarks: round %d/%d: running %s once more\n", g.title, err, raw, round, *count, g.title)
				raw, err = benchOnce(g, bt)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "benchmarks: %s failed twice in round %d: %v\n%s\nbenchmarks: nothing written; run the failing benchmark alone (see above) to see why\n", g.title, round, err, raw)
				os.Exit(1)
			}
			collect(g, raw, results, metrics)
		}
	}
	md := render(results, metrics, notes, *count)
	if *only != "" {
		old, err := os.ReadFile(*out)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchmarks: -only keeps the rest of %s, which cannot be read: %v\n", *out, err)
			os.Exit(1)
		}
		machine := fmt.Sprintf("%s, %s, %s", cpuModel(), goVersion(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
		var left []string
		md, left = merge(string(old), md, partialNote(titles(run), *only, *count, machine, load))
		for _, l := range left {
			fmt.Fprintf(os.Stderr, "benchmarks: %s has no row for this one (new since the last whole run; run without -only to add it): %s\n", *out, l)
		}
	} else {
		hand := kept(*out)
		if hand == "" {
			hand = kept("BENCHMARKS.md")
		}
		md += hand
	}
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "benchmarks: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "benchmarks: wrote %s\n", *out)
}

func titles(gs []group) []string {
	t := make([]string, len(gs))
	for i, g := range gs {
		t[i] = g.title
	}
	return t
}

// loadAverage is the one-minute load average, "unknown" where /proc has
// none.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// benchOnce runs g's benchmarks once and returns their output.
func benchOnce(g group, benchtime string) ([]byte, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", g.bench, "-benchtime", benchtime, "-count", "1", g.pkg)
	cmd.Dir = g.dir
	if g.dir != "" {
		// The peer module is not in go.work (it would join DBOS's
		// requirements to the library's): build it on its own.
		cmd.Env = append(os.Environ(), "GOWORK=off")
	}
	cmd.Stderr = os.Stderr
	return cmd.Output()
}

// collect adds the figures of one `go test -bench` output.
func collect(g group, raw []byte, results, metrics map[string][]float64) {
	short := g.prefix
	if short == "" {
		short = strings.Trim(g.pkg[strings.LastIndex(strings.TrimSuffix(g.pkg, "/"), "/")+1:], "/")
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		results[short+"/"+m[1]] = append(results[short+"/"+m[1]], v)
		for _, cm := range custom.FindAllStringSubmatch(sc.Text(), -1) {
			if cm[2] == "ns/op" {
				continue
			}
			if cv, err := strconv.ParseFloat(cm[1], 64); err == nil {
				k := short + "/" + m[1] + " " + cm[2]
				metrics[k] = append(metrics[k], cv)
			}
		}
	}
}

// perRound combines the figures of the same rounds.
func perRound(f func(i int) float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

func rounds(series ...[]float64) int {
	n := -1
	for _, s := range series {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return max(n, 0)
}

func spread(v []float64, format func(float64) string) string {
	if len(v) < 2 {
		return ""
	}
	return format(slices.Min(v)) + " – " + format(slices.Max(v))
}

func times(v float64) string { return fmt.Sprintf("%.2f×", v) }

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func render(results, metrics map[string][]float64, notes []string, count int) string {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Generated by `go run ./scripts/benchmarks`; do not edit by hand, except the section\n" +
		"\"Where the time goes\" and what follows it, which regeneration keeps (the \"Under load\"\n" +
		"section there is `go run ./scripts/loadbench`'s, \"As the ledger grows\" `go run\n" +
		"./scripts/scalebench`'s). Each figure is the\n")
	fmt.Fprintf(&b, "median of %d rounds of `go test -bench`; every ratio compares two benchmarks of the\n", count)
	b.WriteString("same run on the same machine, so it means more than any absolute time.\n\n")
	fmt.Fprintf(&b, "Machine: %s, %d cores (GOMAXPROCS %d), %s, %s/%s, %s.\n\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), goVersion(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	b.WriteString("## Ratios\n\nEach ratio is taken within one round; the median over rounds is shown, and the\n" +
		"lowest and highest round beside it. A target is met when the median meets it.\n\n")
	b.WriteString(ratioTable(ratios, results, metrics))
	b.WriteString(wrapperCost(results, metrics))
	b.WriteString(peerSection(results, metrics))
	b.WriteString("\n## Absolute times\n\n| benchmark | median | runs |\n| --- | --- | --- |\n")
	names := make([]string, 0, len(results))
	for k := range results {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "| %s | %s/op | %d |\n", k, human(median(results[k])), len(results[k]))
	}
	if len(notes) > 0 {
		b.WriteString("\n## Not run\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString("\nDurable SQLite figures include two fsyncs per operation; the client and server\n" +
		"figures use SQLite in NORMAL synchronous mode over go-sdk in-memory transports,\n" +
		"except CallToolDurable and CallToolDurableWriteBehind (FULL, the default) and the\n" +
		"peer module's (each says its own).\n")
	return b.String()
}

// wrapperCost tells what the client wrapper adds to a new operation beyond
// the bare call and the ledger's claim+complete (target: 25 µs), measured
// three ways.
func wrapperCost(results, metrics map[string][]float64) string {
	var b strings.Builder
	b.WriteString("\n### The client wrapper's own cost per new operation (target: at most 25 µs)\n\n" +
		"| measured as | median | rounds |\n| --- | --- | --- |\n")
	rows := 0
	row := func(name string, v []float64) {
		if len(v) == 0 {
			return
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, human(median(v)), spread(v, human))
		rows++
	}
	l, bare, st, hand := results["client/CallToolLedger"], results["client/CallToolBare"], results["client/StoreClaimComplete"], results["client/CallToolByHand"]
	row("CallToolLedger − CallToolBare − StoreClaimComplete (separate loops)",
		perRound(func(i int) float64 { return l[i] - bare[i] - st[i] }, rounds(l, bare, st)))
	row("CallToolLedger − CallToolByHand (separate loops)",
		perRound(func(i int) float64 { return l[i] - hand[i] }, rounds(l, hand)))
	row("CallToolByHand − CallToolBare − StoreClaimComplete (separate loops; no wrapper code at all)",
		perRound(func(i int) float64 { return hand[i] - bare[i] - st[i] }, rounds(hand, bare, st)))
	row("wrapper − bare − store, interleaved in one loop (WrapperOverhead beyond-ns/op)", metrics["client/WrapperOverhead beyond-ns/op"])
	row("wrapper − same work by hand, interleaved in one loop (WrapperOverhead own-ns/op)", metrics["client/WrapperOverhead own-ns/op"])
	if rows == 0 {
		return ""
	}
	b.WriteString("\nSeparate loops do not add up: the bare call and the store's cgo writes, run in one\n" +
		"loop by hand with no wrapper code at all, cost more than the two loops apart (third\n" +
		"row), so the first row counts that too. The interleaved rows run all four in one\n" +
		"loop, each on its own store and session.\n")
	return b.String()
}

func human(ns float64) string {
	switch abs := math.Abs(ns); {
	case abs >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case abs >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "model name") {
			if i := strings.Index(l, ":"); i >= 0 {
				return strings.TrimSpace(l[i+1:])
			}
		}
	}
	return runtime.GOARCH
}

func goVersion() string {
	raw, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(raw))
}

// values is r's figure in each round.
func values(r ratio, results, metrics map[string][]float64) []float64 {
	if r.metric != "" {
		return metrics[r.num+" "+r.metric]
	}
	n, d := figure(r.num, results, metrics), figure(r.den, results, metrics)
	series := [][]float64{n, d}
	s, ds := figure(r.sub, results, metrics), figure(r.denSub, results, metrics)
	if r.sub != "" {
		series = append(series, s)
	}
	if r.denSub != "" {
		series = append(series, ds)
	}
	return perRound(func(i int) float64 {
		num, den := n[i], d[i]
		if r.sub != "" {
			num -= s[i]
		}
		if r.denSub != "" {
			den -= ds[i]
		}
		if r.throughput {
			return den / num
		}
		return num / den
	}, rounds(series...))
}

// figure is benchmark key's ns/op in each round ("pkg/Name"), or a metric
// it reports ("pkg/Name unit").
func figure(key string, results, metrics map[string][]float64) []float64 {
	if v, ok := results[key]; ok {
		return v
	}
	return metrics[key]
}

// met tells whether v meets target ("<= 1.5", ">= 4"); "" when there is
// no target.
func met(target string, v float64) string {
	op, num, ok := strings.Cut(strings.TrimSpace(target), " ")
	if !ok {
		return ""
	}
	t, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return ""
	}
	switch op {
	case "<=":
		return yes(v <= t)
	case ">=":
		return yes(v >= t)
	}
	return ""
}

func yes(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func ratioTable(rs []ratio, results, metrics map[string][]float64) string {
	var b strings.Builder
	b.WriteString("| comparison | ratio | rounds | target | |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		v := values(r, results, metrics)
		if len(v) == 0 {
			fmt.Fprintf(&b, "| %s | not run | | %s | |\n", r.name, r.target)
			continue
		}
		m := median(v)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.name, times(m), spread(v, times), r.target, met(r.target, m))
	}
	return b.String()
}

// peerSection sets mcpledger beside DBOS Transact Go on the same call:
// median time per operation of each contender, then the ratios.
func peerSection(results, metrics map[string][]float64) string {
	type row struct{ name, bench, metric string }
	tables := []struct {
		title string
		rows  []row
	}{
		{"SQLite (BenchmarkInterleavedSQLite)", []row{
			{"bare go-sdk call (no protection)", sq, "bare-ns/op"},
			{"fsync floor: one durable single-row INSERT (WAL, FULL)", sq, "fsyncfloor-ns/op"},
			{"DBOS Transact Go v1.8.0 (DBOS's settings: WAL, synchronous=NORMAL)", sq, "dbos-ns/op"},
			{"mcpledger client, FULL (default)", sq, "full-ns/op"},
			{"mcpledger client, FULL, write-behind", sq, "writebehind-ns/op"},
		}},
		{"PostgreSQL (BenchmarkInterleavedPostgres)", []row{
			{"bare go-sdk call (no protection)", pg, "bare-ns/op"},
			{"DBOS Transact Go v1.8.0", pg, "dbos-ns/op"},
			{"mcpledger client", pg, "postgres-ns/op"},
		}},
	}
	var b strings.Builder
	b.WriteString("\n## Beside DBOS Transact Go\n\n" +
		"The same in-memory go-sdk call (client's BenchmarkCallToolBare) made by each contender,\n" +
		"keyed by an operation id: for DBOS, a workflow whose ID is the id with the call as its\n" +
		"one step; for mcpledger, client.CallTool with the id as the key. A first call has a\n" +
		"fresh id; a replay runs one of 256 finished ids again, and fails the run if the tool\n" +
		"executes. The contenders run turn about in one loop (the order rotating), so each\n" +
		"meets the same load; with 64 callers a turn is 64 goroutines making 2 calls each, and\n" +
		"the time is the turn's wall time over its calls (1 / throughput). Module\n" +
		"scripts/peer/dbos; median per operation over rounds:\n")
	rows := 0
	for _, t := range tables {
		fmt.Fprintf(&b, "\n%s:\n\n| contender | first call | replay | 64 callers, first call | 64 callers, replay |\n| --- | --- | --- | --- | --- |\n", t.title)
		for _, r := range t.rows {
			cells := make([]string, 0, 4)
			seen := false
			for _, sub := range []string{"first", "replay", "first_64way", "replay_64way"} {
				v := metrics[r.bench+sub+" "+r.metric]
				if len(v) == 0 {
					cells = append(cells, "—")
					continue
				}
				seen = true
				cells = append(cells, human(median(v)))
			}
			if !seen {
				cells = []string{"not run", "", "", ""}
			} else {
				rows++
			}
			fmt.Fprintf(&b, "| %s | %s |\n", r.name, strings.Join(cells, " | "))
		}
	}
	if rows == 0 {
		return ""
	}
	b.WriteString("\nRatios, each within one round (overhead is time per operation minus the bare call's\n" +
		"in the same loop):\n\n")
	b.WriteString(ratioTable(peerRatios, results, metrics))
	return b.String()
}

// handWritten opens the part of BENCHMARKS.md written by hand, which a
// regeneration keeps.
const handWritten = "\n## Where the time goes\n"

// kept returns the hand-written part of the file at path, or "".
func kept(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	i := bytes.Index(raw, []byte(handWritten))
	if i < 0 {
		return ""
	}
	return string(raw[i:])
}

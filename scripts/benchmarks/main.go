// Command benchmarks runs the project's Go benchmarks and regenerates
// BENCHMARKS.md: ratios first (each against its floor, measured in the same
// run), absolute times second, and the machine they were taken on.
//
//	go run ./scripts/benchmarks            # writes BENCHMARKS.md
//	go run ./scripts/benchmarks -count 3 -o /tmp/b.md
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
}

// ratio compares two benchmarks of one run.
type ratio struct {
	name, num, den, target string
	// throughput compares operations per second (den/num) instead of time.
	throughput bool
	// metric, when set, names a ratio the benchmark num reports itself
	// (measured interleaved with its floor in one loop).
	metric string
}

var groups = []group{
	{"SQLite ledger", "./ledger/sqlite/", "^Benchmark(ClaimComplete|RawFloor|ClaimCompleteParallel|Replay)$", "2s", false},
	{"PostgreSQL ledger", "./ledger/postgres/", "^Benchmark(ClaimComplete|RawFloor|ClaimCompleteParallel|ClaimCompleteVsFloor)$", "2s", true},
	{"Client wrapper", "./client/", "^Benchmark(CallTool(Bare|Ledger|Replay|ByHand)|StoreClaimComplete)$", "2s", false},
	{"Client wrapper, interleaved", "./client/", "^BenchmarkWrapperOverhead$", "3000x", false},
	{"Server middleware", "./server/", "^Benchmark(GuardedCall|UnguardedCall|GuardedReplay)$", "2s", false},
}

var ratios = []ratio{
	{"SQLite claim+complete / raw INSERT+UPDATE floor (durable)", "sqlite/ClaimComplete", "sqlite/RawFloor", "<= 1.2", false, ""},
	{"SQLite parallel (64 goroutines) / serial throughput", "sqlite/ClaimCompleteParallel", "sqlite/ClaimComplete", ">= 4", true, ""},
	{"PostgreSQL claim+complete / raw INSERT+UPDATE floor (separate runs)", "postgres/ClaimComplete", "postgres/RawFloor", "<= 1.3", false, ""},
	{"PostgreSQL claim+complete / raw floor, interleaved in one loop", "postgres/ClaimCompleteVsFloor/durable", "", "<= 1.3", false, "store/floor"},
	{"PostgreSQL parallel (64 goroutines) / serial throughput", "postgres/ClaimCompleteParallel", "postgres/ClaimComplete", "", true, ""},
	{"Client wrapper / bare go-sdk call", "client/CallToolLedger", "client/CallToolBare", "", false, ""},
	{"Client wrapper / the same work by hand (claim, bare call, complete)", "client/CallToolLedger", "client/CallToolByHand", "", false, ""},
	{"Client replay / bare go-sdk call", "client/CallToolReplay", "client/CallToolBare", "<= 0.1", false, ""},
	{"Server guarded / unguarded call", "server/GuardedCall", "server/UnguardedCall", "", false, ""},
	{"Server replay / unguarded call", "server/GuardedReplay", "server/UnguardedCall", "", false, ""},
}

var (
	line   = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)
	custom = regexp.MustCompile(`([\d.]+) (\S+/\S+)`)
)

func main() {
	count := flag.Int("count", 5, "rounds: each benchmark runs once per round, and the median over rounds is reported")
	out := flag.String("o", "BENCHMARKS.md", "output file")
	flag.Parse()

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
	for round := 1; round <= *count; round++ {
		for _, g := range groups {
			if g.needsPG && os.Getenv("MCPLEDGER_TEST_POSTGRES") == "" {
				continue
			}
			fmt.Fprintf(os.Stderr, "benchmarks: round %d/%d: %s (%s)\n", round, *count, g.title, g.pkg)
			cmd := exec.Command("go", "test", "-run", "^$", "-bench", g.bench, "-benchtime", g.benchtime, "-count", "1", g.pkg)
			cmd.Stderr = os.Stderr
			raw, err := cmd.Output()
			if err != nil {
				fmt.Fprintf(os.Stderr, "benchmarks: %s: %v\n%s", g.pkg, err, raw)
				os.Exit(1)
			}
			collect(g, raw, results, metrics)
		}
	}
	md := render(results, metrics, notes, *count)
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "benchmarks: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "benchmarks: wrote %s\n", *out)
}

// collect adds the figures of one `go test -bench` output.
func collect(g group, raw []byte, results, metrics map[string][]float64) {
	short := strings.Trim(g.pkg[strings.LastIndex(strings.TrimSuffix(g.pkg, "/"), "/")+1:], "/")
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
	b.WriteString("Generated by `go run ./scripts/benchmarks`; do not edit by hand. Each figure is the\n")
	fmt.Fprintf(&b, "median of %d rounds of `go test -bench`; every ratio compares two benchmarks of the\n", count)
	b.WriteString("same run on the same machine, so it means more than any absolute time.\n\n")
	fmt.Fprintf(&b, "Machine: %s, %d cores (GOMAXPROCS %d), %s, %s/%s, %s.\n\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), goVersion(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	b.WriteString("## Ratios\n\nEach ratio is taken within one round; the median over rounds is shown, and the\n" +
		"lowest and highest round beside it.\n\n" +
		"| comparison | ratio | rounds | target |\n| --- | --- | --- | --- |\n")
	for _, r := range ratios {
		var v []float64
		if r.metric != "" {
			v = metrics[r.num+" "+r.metric]
		} else {
			n, d := results[r.num], results[r.den]
			v = perRound(func(i int) float64 {
				if r.throughput {
					return d[i] / n[i]
				}
				return n[i] / d[i]
			}, rounds(n, d))
		}
		if len(v) == 0 {
			fmt.Fprintf(&b, "| %s | not run | | %s |\n", r.name, r.target)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, times(median(v)), spread(v, times), r.target)
	}
	b.WriteString(wrapperCost(results, metrics))
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
		"figures use SQLite in NORMAL synchronous mode over go-sdk in-memory transports.\n")
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

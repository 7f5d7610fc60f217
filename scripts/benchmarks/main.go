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
	"os"
	"os/exec"
	"regexp"
	"runtime"
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
	count := flag.Int("count", 5, "runs per benchmark (the median is reported)")
	out := flag.String("o", "BENCHMARKS.md", "output file")
	flag.Parse()

	results := map[string][]float64{} // "pkg/Name" -> ns/op of each run
	metrics := map[string][]float64{} // "pkg/Name unit" -> a reported metric of each run
	var notes []string
	for _, g := range groups {
		if g.needsPG && os.Getenv("MCPLEDGER_TEST_POSTGRES") == "" {
			notes = append(notes, g.title+": not run (MCPLEDGER_TEST_POSTGRES is unset)")
			continue
		}
		fmt.Fprintf(os.Stderr, "benchmarks: %s (%s)\n", g.title, g.pkg)
		cmd := exec.Command("go", "test", "-run", "^$", "-bench", g.bench, "-benchtime", g.benchtime,
			"-count", strconv.Itoa(*count), g.pkg)
		cmd.Stderr = os.Stderr
		raw, err := cmd.Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchmarks: %s: %v\n%s", g.pkg, err, raw)
			os.Exit(1)
		}
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
	md := render(results, metrics, notes, *count)
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "benchmarks: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "benchmarks: wrote %s\n", *out)
}

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
	fmt.Fprintf(&b, "median of %d runs of `go test -bench`; every ratio compares two benchmarks of the\n", count)
	b.WriteString("same run on the same machine, so it means more than any absolute time.\n\n")
	fmt.Fprintf(&b, "Machine: %s, %d cores (GOMAXPROCS %d), %s, %s/%s, %s.\n\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), goVersion(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	b.WriteString("## Ratios\n\n| comparison | ratio | target |\n| --- | --- | --- |\n")
	for _, r := range ratios {
		if r.metric != "" {
			if v, ok := metrics[r.num+" "+r.metric]; ok {
				fmt.Fprintf(&b, "| %s | %.2f× | %s |\n", r.name, median(v), r.target)
			} else {
				fmt.Fprintf(&b, "| %s | not run | %s |\n", r.name, r.target)
			}
			continue
		}
		n, okN := results[r.num]
		d, okD := results[r.den]
		if !okN || !okD {
			fmt.Fprintf(&b, "| %s | not run | %s |\n", r.name, r.target)
			continue
		}
		v := median(n) / median(d)
		if r.throughput {
			v = median(d) / median(n)
		}
		fmt.Fprintf(&b, "| %s | %.2f× | %s |\n", r.name, v, r.target)
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
		"| measured as | cost |\n| --- | --- |\n")
	rows := 0
	l, okL := results["client/CallToolLedger"]
	bare, okB := results["client/CallToolBare"]
	st, okS := results["client/StoreClaimComplete"]
	if okL && okB && okS {
		fmt.Fprintf(&b, "| CallToolLedger − CallToolBare − StoreClaimComplete (separate loops) | %s |\n", human(median(l)-median(bare)-median(st)))
		rows++
	}
	if h, ok := results["client/CallToolByHand"]; okL && ok {
		fmt.Fprintf(&b, "| CallToolLedger − CallToolByHand (separate loops) | %s |\n", human(median(l)-median(h)))
		rows++
	}
	if v, ok := metrics["client/WrapperOverhead beyond-ns/op"]; ok {
		fmt.Fprintf(&b, "| wrapper − bare − store, interleaved in one loop (WrapperOverhead beyond-ns/op) | %s |\n", human(median(v)))
		rows++
	}
	if v, ok := metrics["client/WrapperOverhead own-ns/op"]; ok {
		fmt.Fprintf(&b, "| wrapper − same work by hand, interleaved in one loop (WrapperOverhead own-ns/op) | %s |\n", human(median(v)))
		rows++
	}
	if rows == 0 {
		return ""
	}
	b.WriteString("\nSeparate loops do not add up: the bare call and the store's cgo writes, run in one\n" +
		"loop by hand, cost more than the two loops apart, so the first row counts that too.\n" +
		"The interleaved rows run all four in one loop, each on its own store and session.\n")
	return b.String()
}

func human(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
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

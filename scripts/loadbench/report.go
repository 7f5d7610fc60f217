package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// stats summarises the latencies of one class of calls.
type stats struct {
	calls         int
	perSec        float64 // answered with a result, per second
	p50, p99, max time.Duration
}

func summarize(t tally) stats {
	s := stats{calls: len(t.lat)}
	if t.elapsed > 0 {
		s.perSec = float64(t.ok) / t.elapsed.Seconds()
	}
	if len(t.lat) == 0 {
		return s
	}
	lat := slices.Clone(t.lat)
	slices.Sort(lat)
	s.p50, s.p99, s.max = quantile(lat, 0.50), quantile(lat, 0.99), lat[len(lat)-1]
	return s
}

// quantile is the nearest-rank q-quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// outcome is one contender's figures in one scenario, its rounds pooled.
type outcome struct {
	rounds     []sliceResult
	fresh, hot tally
	rss        int64
	cpu        cpuUse
}

func pool(rounds []sliceResult) outcome {
	o := outcome{rounds: rounds}
	for _, r := range rounds {
		o.fresh.add(&r.fresh)
		o.hot.add(&r.hot)
		o.rss = max(o.rss, r.rss)
		o.cpu = o.cpu.plus(r.cpu)
	}
	return o
}

// goal is one of the targets, read off the pooled figures.
type goal struct {
	name   string
	value  func(res map[string]map[string]outcome, after map[string]int64) (float64, bool)
	format func(float64) string
	target string
}

func ratioOf(scen, num, den string, f func(stats) float64) func(map[string]map[string]outcome, map[string]int64) (float64, bool) {
	return func(res map[string]map[string]outcome, _ map[string]int64) (float64, bool) {
		n, ok1 := res[scen][num]
		d, ok2 := res[scen][den]
		if !ok1 || !ok2 {
			return 0, false
		}
		dv := f(summarize(d.fresh))
		if dv == 0 {
			return 0, false
		}
		return f(summarize(n.fresh)) / dv, true
	}
}

func tailOf(scen, who string) func(map[string]map[string]outcome, map[string]int64) (float64, bool) {
	return func(res map[string]map[string]outcome, _ map[string]int64) (float64, bool) {
		o, ok := res[scen][who]
		if !ok {
			return 0, false
		}
		s := summarize(o.fresh)
		if s.p50 == 0 {
			return 0, false
		}
		return float64(s.p99) / float64(s.p50), true
	}
}

func rssIn(scen, who string) func(map[string]map[string]outcome, map[string]int64) (float64, bool) {
	return func(res map[string]map[string]outcome, _ map[string]int64) (float64, bool) {
		o, ok := res[scen][who]
		return float64(o.rss), ok && o.rss > 0
	}
}

func rssAfter(who string) func(map[string]map[string]outcome, map[string]int64) (float64, bool) {
	return func(_ map[string]map[string]outcome, after map[string]int64) (float64, bool) {
		v, ok := after[who]
		return float64(v), ok
	}
}

// cpuRatio is num's CPU per call answered over den's, all roles summed.
func cpuRatio(scen, num, den string) func(map[string]map[string]outcome, map[string]int64) (float64, bool) {
	return func(res map[string]map[string]outcome, _ map[string]int64) (float64, bool) {
		n, ok1 := res[scen][num]
		d, ok2 := res[scen][den]
		if !ok1 || !ok2 || n.fresh.ok == 0 || d.fresh.ok == 0 {
			return 0, false
		}
		per := func(o outcome) float64 {
			return (o.cpu.clients + o.cpu.front + o.cpu.upstream).Seconds() / float64(o.fresh.ok)
		}
		if per(d) == 0 {
			return 0, false
		}
		return per(n) / per(d), true
	}
}

func perSec(s stats) float64     { return s.perSec }
func p50(s stats) float64        { return float64(s.p50) }
func p99(s stats) float64        { return float64(s.p99) }
func times(v float64) string     { return fmt.Sprintf("%.2f×", v) }
func megabytes(v float64) string { return fmt.Sprintf("%.0f MB", v/(1<<20)) }

var goals = []goal{
	{"proxy (SQLite) / guarded upstream, calls/s, 100 clients", ratioOf("closed", "proxy-sqlite", "guarded", perSec), times, ">= 0.8"},
	{"what the CPU allows it: guarded upstream's CPU per call (clients and server) / the proxy's (clients, proxy, upstream)", cpuRatio("closed", "guarded", "proxy-sqlite"), times, ""},
	{"proxy (SQLite) p99 / guarded upstream p99, 100 clients", ratioOf("closed", "proxy-sqlite", "guarded", p99), times, "<= 1.5"},
	{"proxy (SQLite) p50 / guarded upstream p50, 100 clients (a closed loop's latency is its clients over its calls/s)", ratioOf("closed", "proxy-sqlite", "guarded", p50), times, ""},
	{"proxy (SQLite) over the bare upstream / guarded upstream, calls/s, 100 clients: the two ways to guard a server", ratioOf("closed", "proxy-bare", "guarded", perSec), times, ">= 0.8"},
	{"what the CPU allows it: guarded upstream's CPU per call / that of the proxy over the bare upstream (clients, proxy, upstream)", cpuRatio("closed", "guarded", "proxy-bare"), times, ""},
	{"proxy (SQLite) over the bare upstream p99 / guarded upstream p99, 100 clients", ratioOf("closed", "proxy-bare", "guarded", p99), times, "<= 1.5"},
	{"guarded upstream p99 / its p50, 100 clients", tailOf("closed", "guarded"), times, "<= 10"},
	{"proxy (SQLite) p99 / its p50, 100 clients", tailOf("closed", "proxy-sqlite"), times, "<= 10"},
	{"proxy (SQLite) over the bare upstream p99 / its p50, 100 clients", tailOf("closed", "proxy-bare"), times, "<= 10"},
	{"proxy (PostgreSQL) / proxy (SQLite), calls/s, 100 clients", ratioOf("closed", "proxy-pg", "proxy-sqlite", perSec), times, ">= 0.7"},
	{"proxy (SQLite) RSS at 200 clients", rssIn("hot", "proxy-sqlite"), megabytes, "<= 100 MB"},
	{"proxy (PostgreSQL) RSS at 200 clients", rssIn("hot", "proxy-pg"), megabytes, "<= 100 MB"},
	{"proxy (SQLite) RSS 30 s after the load", rssAfter("proxy-sqlite"), megabytes, "<= 60 MB"},
	{"proxy (PostgreSQL) RSS 30 s after the load", rssAfter("proxy-pg"), megabytes, "<= 60 MB"},
	{"calls answered with an error or isError (a FAILED or UNKNOWN key, a refusal), every scenario and contender", errorsIn, count, "<= 0"},
}

// errorsIn counts the calls of the run that did not get a result.
func errorsIn(res map[string]map[string]outcome, _ map[string]int64) (float64, bool) {
	n := 0
	for _, byName := range res {
		for _, o := range byName {
			n += o.fresh.errors() + o.hot.errors()
		}
	}
	return float64(n), len(res) > 0
}

func count(v float64) string { return fmt.Sprintf("%.0f", v) }

// met tells whether v meets target ("<= 1.5", ">= 0.8", "<= 100 MB").
func met(target string, v float64) string {
	f := strings.Fields(target)
	if len(f) < 2 {
		return ""
	}
	var t float64
	if _, err := fmt.Sscan(f[1], &t); err != nil {
		return ""
	}
	if len(f) == 3 && f[2] == "MB" {
		t *= 1 << 20
	}
	ok := false
	switch f[0] {
	case "<=":
		ok = v <= t
	case ">=":
		ok = v >= t
	default:
		return ""
	}
	if ok {
		return "met"
	}
	return "**not met**"
}

func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}

// run is everything a report is made of.
type run struct {
	machine    string
	cfg        config
	order      []contender
	results    map[string]map[string]outcome // scenario -> contender -> figures
	after      map[string]int64              // contender -> RSS after the settle
	afterFile  map[string]int64              // contender -> the file-backed part of it
	loads      []float64                     // the load average at each slice's start
	loadBefore float64
	checks     []check
	notes      []string
	cores      int
}

// render is the "Under load" section of BENCHMARKS.md.
func render(r run) string {
	var b strings.Builder
	b.WriteString(sectionHead + "\n\n")
	fmt.Fprintf(&b, "Generated by `go run ./scripts/loadbench` (%s); regenerate rather than edit. %s.\n\n", r.cfg.describe(), r.machine)
	b.WriteString("Every client is a go-sdk streamable-HTTP client session; every call is create_payment of the\n" +
		"payments example (examples/payments) with its key in `_meta`. The contenders run turn about:\n" +
		"each scenario is split into rounds, every round gives each contender one slice, and the order\n" +
		"rotates from round to round, so each met the same machine. The proxies' upstream is the guarded\n" +
		"example, but for the proxy over the bare upstream: the proxy as the only guard, the other way to\n" +
		"protect a server than its own guard. calls/s counts calls answered with a result; p50, p99 and max are over every call\n" +
		"answered, timed from when it was sent (fixed rate: from when it was due). RSS is the largest\n" +
		"resident set of the process the clients talk to (of either proxy of the pair), sampled every\n" +
		"100 ms from /proc.\n\n")
	lo, hi := minMax(r.loads)
	fmt.Fprintf(&b, "Machine load (one-minute load average, 2 cores shared with other work): %.2f before the run, %.2f – %.2f at the slices' starts.\n", r.loadBefore, lo, hi)
	for _, sc := range r.cfg.scenarios() {
		res, ok := r.results[sc.name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n", sc.title)
		b.WriteString("| contender | calls | calls/s | × guarded | p50 | p99 | max | p99 / p50 | RSS | errors |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		base := summarize(res["guarded"].fresh).perSec
		for _, c := range r.order {
			o, ok := res[c.name]
			if !ok {
				continue
			}
			rows := []struct {
				label string
				t     tally
			}{{c.title, o.fresh}}
			if sc.hot > 0 {
				rows = []struct {
					label string
					t     tally
				}{{c.title + ", new keys", o.fresh}, {c.title + ", hot key", o.hot}}
			}
			for i, row := range rows {
				s := summarize(row.t)
				rel := ""
				if base > 0 && i == 0 {
					rel = times(s.perSec / base)
				}
				tail := ""
				if s.p50 > 0 {
					tail = fmt.Sprintf("%.0f×", float64(s.p99)/float64(s.p50))
				}
				rss := ""
				if i == 0 {
					rss = megabytes(float64(o.rss))
				}
				fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %s |\n",
					row.label, s.calls, s.perSec, rel, ms(s.p50), ms(s.p99), ms(s.max), tail, rss, errorsCell(row.t))
			}
		}
	}
	b.WriteString(cpuSection(r))
	b.WriteString("\n### Goals (each a ratio within this run)\n\n| goal | figure | target | |\n| --- | --- | --- | --- |\n")
	for _, g := range goals {
		v, ok := g.value(r.results, r.after)
		if !ok {
			fmt.Fprintf(&b, "| %s | not run | %s | |\n", g.name, g.target)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", g.name, g.format(v), g.target, met(g.target, v))
	}
	b.WriteString("\n### Payments against answers\n\n" +
		"After the run (and the settle), the payments table of each upstream is read for each slice's\n" +
		"keys: every key answered with a result must have paid once, and no other key may have paid.\n\n" +
		"| contender | scenario | keys answered | keys paid | |\n| --- | --- | --- | --- | --- |\n")
	for _, c := range r.checks {
		verdict := "equal"
		if !c.equal() {
			verdict = "**differ**: " + c.detail()
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s |\n", c.contender, c.scenario, len(c.answered), len(c.paid), verdict)
	}
	if len(r.after) > 0 {
		b.WriteString("\nRSS " + r.cfg.settle.String() + " after the run's last call: ")
		var parts []string
		for _, c := range r.order {
			if v, ok := r.after[c.name]; ok {
				parts = append(parts, fmt.Sprintf("%s %s", c.title, megabytes(float64(v))))
			}
		}
		b.WriteString(strings.Join(parts, "; ") + ".\n")
		parts = parts[:0]
		for _, c := range r.order {
			if v, ok := r.afterFile[c.name]; ok {
				parts = append(parts, fmt.Sprintf("%s %s", c.title, megabytes(float64(v))))
			}
		}
		if len(parts) > 0 {
			b.WriteString("\nOf each RSS above, the part backed by files (RssFile: the program's own code and\n" +
				"read-only data, shared with the page cache, the same from start to end): " + strings.Join(parts, "; ") + ".\n")
		}
	}
	if len(r.notes) > 0 {
		b.WriteString("\n")
		for _, n := range r.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

func errorsCell(t tally) string {
	n := t.errors()
	if n == 0 && t.shed == 0 {
		return "0"
	}
	kinds := make([]string, 0, len(t.errs))
	for k := range t.errs {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return t.errs[kinds[i]] > t.errs[kinds[j]] })
	var parts []string
	for i, k := range kinds {
		if i == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%d × %s", t.errs[k], strings.ReplaceAll(k, "|", "/")))
	}
	if t.shed > 0 {
		parts = append(parts, fmt.Sprintf("%d arrivals shed, every client busy", t.shed))
	}
	if n == 0 {
		return "0; " + strings.Join(parts, "; ")
	}
	return fmt.Sprintf("%d: %s", n, strings.Join(parts, "; "))
}

func minMax(v []float64) (float64, float64) {
	if len(v) == 0 {
		return -1, -1
	}
	return slices.Min(v), slices.Max(v)
}

// sectionHead opens the part of BENCHMARKS.md this program writes; it
// ends at the next "## " heading (a hand-written one may follow) or at
// the end of the file.
const sectionHead = "## Under load"

// splice puts section into doc in place of the old one, or at its end.
func splice(doc, section string) string {
	section = strings.TrimRight(section, "\n") + "\n"
	i := headingAt(doc, sectionHead)
	if i < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	rest := doc[i+len(sectionHead):]
	end := len(doc)
	if j := strings.Index(rest, "\n## "); j >= 0 {
		end = i + len(sectionHead) + j + 1
		section += "\n"
	}
	return doc[:i] + section + doc[end:]
}

// headingAt is where the line that is exactly heading starts, or -1.
func headingAt(doc, heading string) int {
	for off := 0; off < len(doc); {
		line := doc[off:]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		if line == heading {
			return off
		}
		off += len(line) + 1
	}
	return -1
}

// cpuSection tells where the CPU went: per call answered, in the clients
// (this program), the process they talk to, and the upstream behind a
// proxy; and how busy that kept the machine's cores.
func cpuSection(r run) string {
	var b strings.Builder
	for _, sc := range r.cfg.scenarios() {
		if sc.hot > 0 {
			continue // two classes of calls of very different cost
		}
		res, ok := r.results[sc.name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n### CPU per call answered: %s\n\n", sc.title)
		b.WriteString("| contender | clients | server or proxy | upstream behind the proxy | all three | cores busy |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, c := range r.order {
			o, ok := res[c.name]
			if !ok || o.fresh.ok == 0 {
				continue
			}
			per := func(d time.Duration) string { return ms(d / time.Duration(o.fresh.ok)) }
			all := o.cpu.clients + o.cpu.front + o.cpu.upstream
			up := "—"
			if c.upstream != nil {
				up = per(o.cpu.upstream)
			}
			busy := ""
			if o.fresh.elapsed > 0 {
				busy = fmt.Sprintf("%.2f of %d", all.Seconds()/o.fresh.elapsed.Seconds(), r.cores)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c.title, per(o.cpu.clients), per(o.cpu.front), up, per(all), busy)
		}
	}
	return b.String()
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// A short run of the whole benchmark: real processes, real sessions, every
// scenario and contender, a second each with a few clients. It fails when
// the payments and the answers differ (execute returns an error then and
// writes nothing) or a contender is missing from the report, and the
// hand-written section after "Under load" survives.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentctl and the payments example and runs them for several seconds")
	}
	t.Chdir(filepath.Join("..", ".."))
	dir := t.TempDir()
	out := filepath.Join(dir, "BENCHMARKS.md")
	const hand = "## Under load: read by hand\n\nkept\n"
	if err := os.WriteFile(out, []byte("# Benchmarks\n\n"+sectionHead+"\n\nold figures\n\n"+hand), 0o644); err != nil {
		t.Fatal(err)
	}
	c := config{
		out: out, duration: time.Second, rounds: 1, clients: 4, hotClients: 6, hot: 2, rate: 20,
		settle: 10 * time.Millisecond, which: "closed,hot,rate",
		contenders: "bare,guarded,proxy-sqlite,proxy-bare,proxy-pg,proxy-pg-pair", dir: filepath.Join(dir, "run"),
	}
	withPG := os.Getenv(pgtest.Env) != ""
	if withPG {
		c.pg = pgtest.Schema(t)
	}
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := execute(ctx, c, &log); err != nil {
		t.Fatalf("execute: %v\n%s", err, log.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	if strings.Contains(doc, "old figures") || !strings.HasSuffix(doc, "\n"+hand) {
		t.Errorf("the old section was not replaced, or the hand-written one after it was lost:\n%s", doc)
	}
	titles := []string{"bare upstream (no guard)", "guarded upstream", "proxy, SQLite ledger", bareProxyTitle}
	if withPG {
		titles = append(titles, "proxy, PostgreSQL ledger", "two proxies, one PostgreSQL ledger")
	} else if !strings.Contains(doc, "The PostgreSQL contenders were not run") {
		t.Errorf("without %s the report does not say the PostgreSQL contenders were left out:\n%s", pgtest.Env, doc)
	}
	for _, sc := range c.scenarios() {
		table := sectionOf(doc, "### "+sc.title)
		for _, title := range titles {
			if !strings.Contains(table, "| "+title) {
				t.Errorf("scenario %q: no row for %q in\n%s", sc.name, title, table)
			}
		}
	}
	if !strings.Contains(doc, "the part backed by files (RssFile") || !strings.Contains(doc, bareProxyTitle+" ") {
		t.Errorf("the report does not give each process's file-backed RSS:\n%s", doc)
	}
	checks := sectionOf(doc, "### Payments against answers")
	if n := strings.Count(checks, "| equal |"); n != len(titles)*len(c.scenarios()) {
		t.Errorf("%d equal payment counts; want one per contender and scenario (%d):\n%s", n, len(titles)*len(c.scenarios()), checks)
	}
}

// sectionOf is the text from heading to the next heading.
func sectionOf(doc, heading string) string {
	i := strings.Index(doc, heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+1:]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestSplice(t *testing.T) {
	const section = sectionHead + "\n\nnew\n"
	tests := []struct{ name, doc, want string }{
		{"appended", "# B\n\ntext\n", "# B\n\ntext\n\n" + section},
		{"replaced at the end", "# B\n\n" + sectionHead + "\n\nold\n", "# B\n\n" + section},
		{"replaced before a hand-written section", "# B\n\n" + sectionHead + "\n\nold\n\n## Later\n\nhand\n", "# B\n\n" + section + "\n## Later\n\nhand\n"},
		{"a longer heading is another section", "# B\n\n" + sectionHead + ": notes\n\nhand\n", "# B\n\n" + sectionHead + ": notes\n\nhand\n\n" + section},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := splice(tc.doc, section); got != tc.want {
				t.Errorf("splice(%q) = %q; want %q", tc.doc, got, tc.want)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := quantile(lat, tc.q); got != tc.want {
			t.Errorf("quantile(1..100 ms, %v) = %v; want %v", tc.q, got, tc.want)
		}
	}
}

func TestMet(t *testing.T) {
	for _, tc := range []struct {
		target string
		v      float64
		want   string
	}{
		{">= 0.8", 0.8, "met"},
		{">= 0.8", 0.79, "**not met**"},
		{"<= 100 MB", 99 << 20, "met"},
		{"<= 100 MB", 101 << 20, "**not met**"},
		{"", 1, ""},
	} {
		if got := met(tc.target, tc.v); got != tc.want {
			t.Errorf("met(%q, %v) = %q; want %q", tc.target, tc.v, got, tc.want)
		}
	}
}

// The CPU time read from /proc grows as this process works.
func TestCPUTimeGrows(t *testing.T) {
	before, err := cpuTime(0)
	if err != nil {
		t.Skipf("no /proc/self/stat here: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		now, err := cpuTime(0)
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cpuTime stayed %v over 5s of work (%d)", before, x)
		}
	}
}

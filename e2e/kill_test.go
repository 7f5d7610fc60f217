package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// Knobs, all optional.
const (
	// envIterations is the number of iterations per ledger (default 100,
	// so 200 in all).
	envIterations = "MCPLEDGER_KILL_ITERATIONS"
	// envSeed replays a run: the seed is printed at the start.
	envSeed = "MCPLEDGER_KILL_SEED"
	// envBudget bounds the wall time of the whole suite (default 6m).
	envBudget = "MCPLEDGER_KILL_BUDGET"
	// envReport names a file the suite appends its figures to: go test
	// shows a passing package's output only with -v, so a CI script that
	// wants the figures in its log prints this file.
	envReport = "MCPLEDGER_KILL_REPORT"
)

// killWindow bounds the random delay of a kill after the agent issued a
// key: one call takes 10 to 40 ms here, so most kills land while a call
// is in flight.
const killWindow = 25 * time.Millisecond

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// TestKill is the kill suite: see the package doc and README.md.
func TestKill(t *testing.T) {
	iterations := envInt(t, envIterations, 100)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, s, err)
		}
		seed = v
	}
	budget := 6 * time.Minute
	if s := os.Getenv(envBudget); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", envBudget, s, err)
		}
		budget = d
	}
	deadline := time.Now().Add(budget)
	if d, ok := t.Deadline(); ok && d.Add(-30*time.Second).Before(deadline) {
		deadline = d.Add(-30 * time.Second)
	}
	say(t, "kill suite: seed %d (%s=%d replays it), %d iterations per ledger, deadline in %v",
		seed, envSeed, seed, iterations, time.Until(deadline).Round(time.Second))
	build(t)

	halves := []struct {
		name  string
		setup func(t *testing.T, dir string) (agentLedger, proxyLedger string)
	}{
		{"sqlite", func(t *testing.T, dir string) (string, string) {
			return filepath.Join(dir, "agent.db"), filepath.Join(dir, "proxy.db")
		}},
		{"postgres", func(t *testing.T, _ string) (string, string) {
			return pgtest.Schema(t), pgtest.Schema(t)
		}},
	}
	total := &counts{}
	totals := [2]*counts{{}, {}} // durable, write-behind
	for i, h := range halves {
		t.Run(h.name, func(t *testing.T) {
			// Each half gets an equal share of the time that is left.
			share := time.Until(deadline) / time.Duration(len(halves)-i)
			c := &counts{}
			agentLedger, proxyLedger := h.setup(t, t.TempDir())
			w := newWorld(t, h.name, agentLedger, proxyLedger, c)
			plans := makePlans(seed+uint64(i), iterations, killWindow, h.name)
			w.run(plans, time.Now().Add(share))
			say(t, "kill suite %s: %s", h.name, c)
			for m, mc := range w.modes {
				say(t, "kill suite %s %s: %s", h.name, modeNames[m], mc)
				totals[m].add(func(tc *counts) { tc.merge(mc) })
				if mc.duplicates != 0 {
					t.Errorf("%s duplicates = %d; want 0", modeNames[m], mc.duplicates)
				}
			}
			if c.iterations >= writeBehindEvery && w.modes[1].iterations == 0 {
				t.Errorf("no iteration ran with write-behind in %d", c.iterations)
			}
			total.add(func(tc *counts) { tc.merge(c) })
			if c.iterations < iterations {
				t.Errorf("ran %d of %d iterations before the deadline; raise %s or lower %s", c.iterations, iterations, envBudget, envIterations)
			}
			if c.duplicates != 0 {
				t.Errorf("duplicates = %d; want 0", c.duplicates)
			}
		})
	}
	say(t, "kill suite total: %s", total)
	for m, mc := range totals {
		say(t, "kill suite total %s: %s", modeNames[m], mc)
	}
}

// modeNames name the durability of an iteration in the figures.
var modeNames = [2]string{"durable", "write-behind"}

// say logs to the test log, to stdout, and to the file named by
// envReport when it is set.
func say(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
	line := fmt.Sprintf(format+"\n", args...)
	fmt.Print(line)
	if path := os.Getenv(envReport); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Errorf("%s: %v", envReport, err)
			return
		}
		defer f.Close()
		if _, err := f.WriteString(line); err != nil {
			t.Errorf("%s: %v", envReport, err)
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

func (c *counts) merge(o *counts) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c.iterations += o.iterations
	for i := range c.kills {
		c.kills[i] += o.kills[i]
	}
	c.faultKills += o.faultKills
	c.missed += o.missed
	c.unknown += o.unknown
	c.reconciled += o.reconciled
	c.unresolved += o.unresolved
	c.staleAgent += o.staleAgent
	c.keys += o.keys
	c.payments += o.payments
	c.duplicates += o.duplicates
	for m, n := range o.auto {
		if c.auto == nil {
			c.auto = map[ledger.Method]int{}
		}
		c.auto[m] += n
	}
	c.resolveTimes = append(c.resolveTimes, o.resolveTimes...)
	c.serverUnknown += o.serverUnknown
}

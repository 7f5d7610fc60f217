package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/e2e/internal/journal"
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
)

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
	for i, h := range halves {
		t.Run(h.name, func(t *testing.T) {
			// Each half gets an equal share of the time that is left.
			share := time.Until(deadline) / time.Duration(len(halves)-i)
			c := &counts{}
			agentLedger, proxyLedger := h.setup(t, t.TempDir())
			w := newWorld(t, h.name, agentLedger, proxyLedger, c)
			plans := makePlans(seed+uint64(i), iterations, 150*time.Millisecond, h.name)
			w.run(plans, time.Now().Add(share))
			say(t, "kill suite %s: %s", h.name, c)
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
}

// say logs to the test log and to stdout, so CI output shows it even
// when the test passes without -v.
func say(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
	fmt.Printf(format+"\n", args...)
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
	c.reaped += o.reaped
	c.keys += o.keys
	c.payments += o.payments
	c.duplicates += o.duplicates
}

// run runs plans until they are done or the deadline passes; the first
// iteration that breaks the promise ends the run.
func (w *world) run(plans []plan, deadline time.Time) {
	for _, p := range plans {
		if time.Now().After(deadline) {
			w.t.Logf("deadline reached after %d iterations", w.counts.iterations)
			return
		}
		if !w.iterate(p) {
			return
		}
	}
}

// iterate runs one plan and reports whether the promise held.
func (w *world) iterate(p plan) bool {
	t := w.t
	ctx := context.Background()
	began := time.Now()
	var marks []string
	mark := func(what string) {
		marks = append(marks, fmt.Sprintf("%s@%dms", what, time.Since(began).Milliseconds()))
	}
	journalPath := filepath.Join(w.dir, fmt.Sprintf("journal-%03d.jsonl", p.N))
	if w.payHTTP.exited() {
		w.startPayments("")
	}
	if p.Fault != "" {
		w.payHTTP.stop()
		w.startPayments(p.Fault + "=kill")
	}
	agent := w.startAgent(p, journalPath, p.Keys)
	killed := w.kill(p, agent)
	mark("kill")
	w.counts.add(func(c *counts) {
		if killed {
			c.kills[p.Victim]++
			if p.Fault != "" {
				c.faultKills++
			}
		} else {
			c.missed++
		}
	})
	if err := agent.wait(t, 2*time.Minute); err != nil && !(p.Victim == victimAgent && agent.killedBySignal()) {
		t.Errorf("%v: agent: %v\n%s", p, err, agent.log)
		return false
	}
	// Restart what died. An HTTP payments server or proxy the suite
	// runs is restarted at once by kill; stdio children are restarted by
	// their parents (the agent's and the proxy's connect functions).
	// A killed agent is run again with the same keys, and so is one that
	// still has keys without a settled answer.
	mark("agent")
	if !w.rerun(ctx, p, journalPath) {
		return false
	}
	mark("rerun")
	w.reap(p, 0)
	if err := w.waitApplied(ctx, p.Keys, 20*time.Second); err != nil {
		t.Errorf("%v: %v", p, err)
		return false
	}
	mark("applied")
	views, err := w.look(ctx, journalPath, p.Keys)
	if err != nil {
		t.Errorf("%v: %v", p, err)
		return false
	}
	ok := w.verify(p, check(views, false))
	unknown := 0
	nUnresolved := 0
	for _, v := range views {
		for _, r := range v.records() {
			if r.State == "UNKNOWN" {
				unknown++
			}
		}
		if v.issued && unresolved(v) {
			nUnresolved++
			if testing.Verbose() {
				t.Logf("%v: unresolved before reconciliation: %v (%s)", p, v, v.answer.Text+v.answer.Error)
			}
		}
	}
	mark("check")
	n, err := w.reconcile(ctx, views)
	mark("reconcile")
	if err != nil {
		t.Errorf("%v: reconcile: %v", p, err)
		return false
	}
	if n > 0 || nUnresolved > 0 {
		// The agent asks again: reconciled records now replay what the
		// operator decided.
		if !w.runAgent(p, journalPath, p.Keys) {
			return false
		}
		if views, err = w.look(ctx, journalPath, p.Keys); err != nil {
			t.Errorf("%v: %v", p, err)
			return false
		}
		ok = w.verify(p, check(views, true)) && ok
	}
	mark("verify")
	if err := w.integrity(ctx); err != nil {
		t.Errorf("%v: %v", p, err)
		ok = false
	}
	dups, err := w.duplicates(ctx)
	if err != nil {
		t.Errorf("%v: %v", p, err)
		ok = false
	}
	mark("integrity")
	paid, stale := 0, 0
	for _, v := range views {
		paid += v.paid
		if maskedUnknown(v) {
			stale++
		}
	}
	w.counts.add(func(c *counts) {
		c.iterations++
		c.keys += len(p.Keys)
		c.payments += paid
		c.unknown += unknown
		c.reconciled += n
		c.unresolved += nUnresolved
		c.staleAgent += stale
		c.duplicates = dups
	})
	if testing.Verbose() {
		t.Logf("%v: killed=%v unresolved=%d UNKNOWN=%d reconciled=%d in %v %v", p, killed, nUnresolved, unknown, n, time.Since(began).Round(time.Millisecond), marks)
	}
	return ok
}

// verify reports problems found for plan p; true when there are none.
func (w *world) verify(p plan, problems []string) bool {
	for _, s := range problems {
		w.t.Errorf("%v: %s", p, s)
	}
	return len(problems) == 0
}

// kill kills p's victim and restarts it when the suite owns it. It
// reports whether the kill found its victim alive.
func (w *world) kill(p plan, agent *proc) bool {
	t := w.t
	if p.Fault != "" {
		// The server kills itself at the fault point. A fault after the
		// delivery fires once the dispatcher delivered, which may follow
		// the agent's last answer.
		if _, ok := w.payHTTP.log.waitLine("fault "+p.Fault+" reached", 30*time.Second, w.payHTTP.done); !ok {
			t.Logf("%v: fault point never reached", p)
			w.payHTTP.stop()
			w.startPayments("")
			return false
		}
		<-w.payHTTP.done
		if !w.payHTTP.killedBySignal() {
			t.Errorf("%v: payments ended with %v; want SIGKILL", p, w.payHTTP.cmd.ProcessState)
		}
		w.startPayments("")
		return true
	}
	if _, ok := agent.log.waitLine("agent: issued", 30*time.Second, agent.done); !ok {
		return false
	}
	timer := time.NewTimer(p.Delay)
	select {
	case <-timer.C:
	case <-agent.done:
		timer.Stop()
	}
	switch p.Victim {
	case victimAgent:
		if agent.exited() {
			return false
		}
		// The agent's stdio proxy ends once its stdin closes; its records
		// are settled when it is gone.
		child := descendant(agent.pid(), w.bin.agentctl)
		agent.kill()
		w.reap(p, child)
		return true
	case victimProxy:
		if p.AgentHTTP {
			px := w.proxyFor(p)
			px.kill()
			w.reap(p, 0)
			w.startProxy(p.UpstreamHTTP)
			return true
		}
		pid := descendant(agent.pid(), w.bin.agentctl)
		if !killPID(pid) {
			return false
		}
		w.reap(p, pid)
		return true
	default:
		if p.UpstreamHTTP {
			w.payHTTP.kill()
			w.startPayments("")
			return true
		}
		root := agent.pid()
		if p.AgentHTTP {
			root = w.proxyFor(p).pid()
		}
		return killPID(descendant(root, w.bin.payments))
	}
}

// reap waits for pid (when not 0) to end, then settles the records of
// dead proxies (see reapDeadOwners).
func (w *world) reap(p plan, pid int) {
	if pid != 0 {
		if err := waitGone(pid, 30*time.Second); err != nil {
			w.t.Errorf("%v: %v", p, err)
			return
		}
	}
	n, err := reapDeadOwners(context.Background(), w.proxyStore, proxyTenant)
	if err != nil {
		w.t.Errorf("%v: %v", p, err)
	}
	w.counts.add(func(c *counts) { c.reaped += n })
}

func killPID(pid int) bool {
	if pid == 0 {
		return false
	}
	return syscall.Kill(pid, syscall.SIGKILL) == nil
}

// rerun runs the agent again with p's keys when the first run was killed
// or left keys without an answer it can act on.
func (w *world) rerun(ctx context.Context, p plan, journalPath string) bool {
	views, err := w.look(ctx, journalPath, p.Keys)
	if err != nil {
		w.t.Errorf("%v: %v", p, err)
		return false
	}
	for _, k := range p.Keys {
		v := views[k]
		if a := v.answer; a == nil || a.Outcome == journal.OutcomeNotSent || a.Outcome == journal.OutcomeInProgress || a.Outcome == journal.OutcomeError {
			return w.runAgent(p, journalPath, p.Keys)
		}
	}
	return true
}

// runAgent runs the agent to its end without killing anything.
func (w *world) runAgent(p plan, journalPath string, keys []string) bool {
	a := w.startAgent(p, journalPath, keys)
	if err := a.wait(w.t, 2*time.Minute); err != nil {
		w.t.Errorf("%v: agent rerun: %v\n%s", p, err, a.log)
		return false
	}
	return true
}

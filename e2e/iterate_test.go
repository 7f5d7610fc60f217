package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/e2e/internal/journal"
	"github.com/mcpledger/mcpledger/ledger"
)

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
	journalPath := filepath.Join(w.dir, fmt.Sprintf("journal-%03d.jsonl", p.N))
	if w.payHTTP.exited() {
		w.startPayments("")
	}
	if p.Fault != "" {
		w.payHTTP.stop()
		w.startPayments(p.Fault + "=kill")
	}
	agent := w.startAgent(p, journalPath, p.Keys)
	w.back = time.Time{}
	killed := w.kill(p, agent)
	if err := agent.wait(t, 2*time.Minute); err != nil && !(p.Victim == victimAgent && agent.killedBySignal()) {
		t.Errorf("%v: agent: %v\n%s", p, err, agent.log)
		return false
	}
	back := w.back
	if p.Victim == victimAgent || back.IsZero() {
		// A killed agent comes back with the rerun below.
		back = time.Now()
	}
	// Restart what died. An HTTP payments server or proxy the suite
	// runs was restarted at once by kill; stdio children are restarted
	// by their parents (the agent's and the proxy's connect functions).
	// A killed agent is run again with the same keys, and so is one that
	// still has keys without a settled answer.
	if !w.rerun(ctx, p, journalPath) {
		return false
	}
	w.reap(p, 0)
	if err := w.waitDrained(ctx, p.Keys, 20*time.Second); err != nil {
		t.Errorf("%v: %v", p, err)
		return false
	}
	views, err := w.look(ctx, journalPath, p.Keys)
	if err != nil {
		t.Errorf("%v: %v", p, err)
		return false
	}
	ok := w.verify(p, check(views, false))
	before := summarize(views)
	var auto counts
	for _, v := range views {
		auto.autoResolved(v, back)
	}
	if testing.Verbose() {
		for _, v := range views {
			if v.issued && unresolved(v) {
				t.Logf("%v: unresolved before reconciliation: %v", p, v)
			}
		}
	}
	reconciled, err := w.reconcile(ctx, views)
	if err != nil {
		t.Errorf("%v: reconcile: %v", p, err)
		return false
	}
	if reconciled > 0 || before.unresolved > 0 {
		// The agent asks again: reconciled records now replay what the
		// operator decided.
		if !w.runAgent(p, journalPath, p.Keys) {
			return false
		}
		if err := w.waitDrained(ctx, p.Keys, 20*time.Second); err != nil {
			t.Errorf("%v: %v", p, err)
			return false
		}
		if views, err = w.look(ctx, journalPath, p.Keys); err != nil {
			t.Errorf("%v: %v", p, err)
			return false
		}
		ok = w.verify(p, check(views, true)) && ok
	}
	if err := w.integrity(ctx); err != nil {
		t.Errorf("%v: %v", p, err)
		ok = false
	}
	dups, err := w.duplicates(ctx)
	if err != nil {
		t.Errorf("%v: %v", p, err)
		ok = false
	}
	if len(dups) > 0 {
		t.Errorf("%v: the downstream applied twice: %v", p, dups)
		ok = false
	}
	after := summarize(views)
	if after.stale > 0 {
		// The proxy answers a caller that sends keys with the wire errors,
		// so the agent's ledger must never hold an unknown outcome as FAILED.
		t.Errorf("%v: %d keys' unknown outcomes were stored FAILED by the agent", p, after.stale)
		ok = false
	}
	tally := func(c *counts) {
		c.iterations++
		if killed {
			c.kills[p.Victim]++
			if p.Fault != "" {
				c.faultKills++
			}
		} else {
			c.missed++
		}
		c.keys += len(p.Keys)
		c.payments += after.paid
		c.unknown += before.unknown
		c.reconciled += reconciled
		c.unresolved += before.unresolved
		c.staleAgent += after.stale
		c.duplicates = len(dups)
		c.serverUnknown += before.serverUnknown
		for m, n := range auto.auto {
			if c.auto == nil {
				c.auto = map[ledger.Method]int{}
			}
			c.auto[m] += n
		}
		c.resolveTimes = append(c.resolveTimes, auto.resolveTimes...)
	}
	w.counts.add(tally)
	w.modes[b2i(p.WriteBehind)].add(tally)
	if testing.Verbose() {
		t.Logf("%v: killed=%v unresolved=%d UNKNOWN=%d reconciled=%d in %v",
			p, killed, before.unresolved, before.unknown, reconciled, time.Since(began).Round(time.Millisecond))
	}
	return ok
}

// tally is what one iteration adds to the figures.
type tally struct {
	unknown    int // UNKNOWN records over the three ledgers
	unresolved int // issued keys whose outcome the agent does not know
	paid       int // payments made
	stale      int // see maskedUnknown
	// serverUnknown: the server's UNKNOWN records (left for a person)
	serverUnknown int
}

func summarize(views map[string]*view) tally {
	var s tally
	for _, v := range views {
		for _, r := range v.records() {
			if r.State == ledger.StateUnknown {
				s.unknown++
			}
		}
		if v.issued && unresolved(v) {
			s.unresolved++
		}
		if v.server != nil && v.server.State == ledger.StateUnknown {
			s.serverUnknown++
		}
		if maskedUnknown(v) {
			s.stale++
		}
		s.paid += v.paid
	}
	return s
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
		w.back = time.Now()
		w.startPayments("")
		return true
	}
	if _, ok := agent.log.waitLine("agent: issued "+p.Keys[p.After], 30*time.Second, agent.done); !ok {
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
			w.back = time.Now()
			w.startProxy(p)
			return true
		}
		pid := descendant(agent.pid(), w.bin.agentctl)
		if !killPID(pid) {
			return false
		}
		w.back = time.Now()
		w.reap(p, pid)
		return true
	default:
		if p.UpstreamHTTP {
			w.payHTTP.kill()
			w.back = time.Now()
			w.startPayments("")
			return true
		}
		root := agent.pid()
		if p.AgentHTTP {
			root = w.proxyFor(p).pid()
		}
		ok := killPID(descendant(root, w.bin.payments))
		w.back = time.Now()
		return ok
	}
}

// reap waits for pid (when not 0) to end. Nothing settles the dead
// process's records here: the next caller of a key finds its owner gone
// (same host, pid and start time) and the ledger makes the record UNKNOWN
// at once, as it does for any agent runtime.
func (w *world) reap(p plan, pid int) {
	if pid == 0 {
		return
	}
	if err := waitGone(pid, 30*time.Second); err != nil {
		w.t.Errorf("%v: %v", p, err)
	}
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

package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/e2e/internal/journal"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
)

// counts are the suite's figures, printed at the end.
type counts struct {
	mu sync.Mutex // guards every field

	iterations int
	kills      [victims]int
	faultKills int
	// missed counts kills that found their victim already gone (the agent
	// finished before the random delay ran out, say).
	missed int
	// unknown counts UNKNOWN records found after an iteration, over all
	// three ledgers; reconciled counts those an operator command settled.
	unknown, reconciled int
	// unresolved counts keys whose outcome the agent could not learn
	// (unknown, not sent, in progress, an error result from the proxy).
	unresolved int
	// staleAgent counts keys the agent's ledger keeps FAILED with the
	// proxy's "outcome unknown" error result after the operator
	// reconciled the proxy's and the server's records.
	staleAgent int
	keys       int
	payments   int
	duplicates int
	// auto counts the findings that settled an UNKNOWN record without a
	// person, over the three ledgers, by method (see autoResolved);
	// resolveTimes are how long after the killed process came back each
	// one was recorded.
	auto         map[ledger.Method]int
	resolveTimes []time.Duration
	// serverUnknown counts the server's UNKNOWN records left for a person
	// ("payments -reconcile KEY"): create_payment has a reconciler, so the
	// goal is 0.
	serverUnknown int
}

func (c *counts) add(f func(c *counts)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func (c *counts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("iterations=%d kills: agent=%d proxy=%d payments=%d (at fault hooks %d, missed %d) keys=%d payments=%d unresolved=%d UNKNOWN=%d reconciled=%d stale-agent=%d duplicates=%d %s",
		c.iterations, c.kills[victimAgent], c.kills[victimProxy], c.kills[victimPayments], c.faultKills, c.missed,
		c.keys, c.payments, c.unresolved, c.unknown, c.reconciled, c.staleAgent, c.duplicates, c.resolution())
}

// resolution is the figures of automatic reconciliation: the UNKNOWN
// records settled without a person, by method, the median and the
// longest time from the killed process's return to the settling finding,
// and the server's UNKNOWN records left for a person.
func (c *counts) resolution() string {
	var b strings.Builder
	total := 0
	for _, m := range ledger.Methods {
		if m != ledger.MethodPerson {
			total += c.auto[m]
		}
	}
	fmt.Fprintf(&b, "auto-resolved=%d (", total)
	for i, m := range ledger.Methods {
		if m == ledger.MethodPerson {
			continue
		}
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", m, c.auto[m])
	}
	b.WriteString(")")
	if len(c.resolveTimes) > 0 {
		d := slices.Clone(c.resolveTimes)
		slices.Sort(d)
		fmt.Fprintf(&b, " resolve-after-restart median=%v max=%v", d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(&b, " server-UNKNOWN-left-for-a-person=%d", c.serverUnknown)
	return b.String()
}

// autoResolved adds to c the findings of v's records that settled an
// UNKNOWN record without a person (found, failed or not run, by any
// method but a person's), timed from back, when the killed process came
// back (a finding before it counts as 0).
func (c *counts) autoResolved(v *view, back time.Time) {
	for _, r := range v.records() {
		for _, f := range r.Findings {
			if f.Method == ledger.MethodPerson || f.Verdict == ledger.VerdictUnknown {
				continue
			}
			if c.auto == nil {
				c.auto = map[ledger.Method]int{}
			}
			c.auto[f.Method]++
			c.resolveTimes = append(c.resolveTimes, max(f.At.Sub(back), 0))
		}
	}
}

// view is everything the suite knows about one key after an iteration.
type view struct {
	key    string
	issued bool
	answer *journal.Entry // the agent's latest answer; nil when none
	// paid counts the key's payments; paymentID is the payment.
	paid      int
	paymentID string
	// applied counts the downstream's applications of the key's events.
	applied int
	// Records of the key in the three ledgers (nil: none).
	agent, proxy, server *ledger.Record
}

func (v *view) records() []*ledger.Record {
	var out []*ledger.Record
	for _, r := range []*ledger.Record{v.agent, v.proxy, v.server} {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// state is a record's state for messages, "-" for none.
func state(r *ledger.Record) string {
	if r == nil {
		return "-"
	}
	return string(r.State)
}

func (v *view) String() string {
	ans := "no answer"
	if v.answer != nil {
		ans = v.answer.Outcome
		if v.answer.UpstreamState != "" {
			ans += "(proxy " + v.answer.UpstreamState + ")"
		}
		if v.answer.Reconciled {
			ans += "(reconciled)"
		}
		if msg := v.answer.Error; msg != "" {
			ans += " [" + msg + "]"
		}
	}
	return fmt.Sprintf("%s: issued=%v answer=%s paid=%d applied=%d ledgers agent=%s proxy=%s server=%s",
		v.key, v.issued, ans, v.paid, v.applied, state(v.agent), state(v.proxy), state(v.server))
}

// look gathers the views of keys from the journal, the databases and the
// ledgers.
func (w *world) look(ctx context.Context, journalPath string, keys []string) (map[string]*view, error) {
	entries, err := journal.Read(journalPath)
	if err != nil {
		return nil, err
	}
	views := map[string]*view{}
	for _, k := range keys {
		views[k] = &view{key: k}
	}
	for i := range entries {
		e := &entries[i]
		v, ok := views[e.Key]
		if !ok {
			return nil, fmt.Errorf("journal has key %q the plan never gave the agent", e.Key)
		}
		switch e.Event {
		case journal.EventIssue:
			v.issued = true
		case journal.EventAnswer:
			v.answer = e
		}
	}
	for _, v := range views {
		if err := w.pay.QueryRowContext(ctx, `SELECT count(*), coalesce(max(id), '') FROM payments WHERE idempotency_key = ?`, serverKey(v.key)).
			Scan(&v.paid, &v.paymentID); err != nil {
			return nil, fmt.Errorf("payments of %s: %w", v.key, err)
		}
		if err := w.down.QueryRowContext(ctx, `SELECT count(*) FROM applied WHERE idempotency_key = ?`, serverKey(v.key)).Scan(&v.applied); err != nil {
			return nil, fmt.Errorf("downstream of %s: %w", v.key, err)
		}
		for _, l := range []struct {
			st                 ledger.Store
			tenant, layer, key string
			rec                **ledger.Record
		}{{w.agentStore, agentTenant, ledger.LayerClient, v.key, &v.agent}, {w.proxyStore, proxyTenant, ledger.LayerProxy, proxyKey(v.key), &v.proxy},
			{w.serverStore, server.DefaultTenant, ledger.LayerServer, serverKey(v.key), &v.server}} {
			r, err := l.st.Get(ctx, ledger.ID{Tenant: l.tenant, Layer: l.layer, Tool: "create_payment", Key: l.key})
			if errors.Is(err, ledger.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("ledger record of %s: %w", v.key, err)
			}
			*l.rec = r
		}
	}
	return views, nil
}

// waitDrained waits until the outbox delivered every event and the
// downstream applied every payment of keys. Delivery is asynchronous (the
// dispatcher polls), and after a kill mid-delivery the event is delivered
// again once its delivery lease ran out: only a drained outbox shows
// whether that second delivery was applied twice.
func (w *world) waitDrained(ctx context.Context, keys []string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		var pending, missing int
		if err := w.pay.QueryRowContext(ctx, `SELECT count(*) FROM mcpledger_outbox WHERE delivered_at IS NULL AND dead_at IS NULL`).Scan(&pending); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		for _, k := range keys {
			var paid, applied int
			if err := w.pay.QueryRowContext(ctx, `SELECT count(*) FROM payments WHERE idempotency_key = ?`, serverKey(k)).Scan(&paid); err != nil {
				return err
			}
			if err := w.down.QueryRowContext(ctx, `SELECT count(*) FROM applied WHERE idempotency_key = ?`, serverKey(k)).Scan(&applied); err != nil {
				return err
			}
			if applied < paid {
				missing++
			}
		}
		if pending == 0 && missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v the outbox still has %d undelivered events and %d payments of %v are not applied", d, pending, missing, keys)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	var dead int
	if err := w.pay.QueryRowContext(ctx, `SELECT count(*) FROM mcpledger_outbox WHERE dead_at IS NOT NULL`).Scan(&dead); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if dead != 0 {
		return fmt.Errorf("the outbox gave up on %d events: their payments never reach the downstream", dead)
	}
	return nil
}

// check holds the promise for every view and returns what is broken.
// reconciled is set once the operator settled the UNKNOWN records and the
// agent asked again: every issued key must then have an answer, except
// those the agent's ledger keeps from the proxy's error result (see
// maskedUnknown).
func check(views map[string]*view, reconciled bool) []string {
	var bad []string
	fail := func(v *view, format string, args ...any) {
		bad = append(bad, fmt.Sprintf(format, args...)+"; "+v.String())
	}
	for _, v := range views {
		if v.paid > 1 {
			fail(v, "key %s made %d payments; want at most 1", v.key, v.paid)
		}
		if v.applied > v.paid {
			fail(v, "the downstream applied key %s %d times for %d payments", v.key, v.applied, v.paid)
		}
		if !v.issued {
			if v.paid != 0 || len(v.records()) != 0 {
				fail(v, "key %s was never issued by the agent, yet it has payments or records", v.key)
			}
			continue
		}
		// Every settled record must agree with the payments table.
		for _, r := range v.records() {
			switch {
			case r.State == ledger.StateSucceeded && v.paid != 1:
				fail(v, "a ledger holds %s SUCCEEDED without a payment", v.key)
			case r.State == ledger.StateFailed && v.paid != 0 && !(r == v.agent && maskedUnknown(v)):
				fail(v, "a ledger holds %s FAILED (%s) while a payment exists", v.key, r.ErrorKind)
			}
		}
		a := v.answer
		switch {
		case a != nil && a.Outcome == journal.OutcomeSucceeded:
			if v.paid != 1 || v.applied != 1 {
				fail(v, "the agent got success for %s but payments=%d applied=%d; want 1 and 1", v.key, v.paid, v.applied)
			}
			if a.PaymentID != "" && a.PaymentID != v.paymentID {
				fail(v, "the agent got payment %s for %s, the payments table has %s", a.PaymentID, v.key, v.paymentID)
			}
		case a != nil && a.Outcome == journal.OutcomeToolError && a.UpstreamState == "":
			// The tool said no (or a person reconciled it as failed):
			// nothing may have been paid.
			if v.paid != 0 {
				fail(v, "the agent got a tool error for %s but a payment exists", v.key)
			}
		case reconciled && !maskedUnknown(v):
			fail(v, "after reconciliation the outcome of %s is still open to the agent", v.key)
		case !reconciled && !heldUnknown(v):
			fail(v, "the outcome of %s is unknown to the agent and no ledger holds it UNKNOWN: silently lost", v.key)
		}
	}
	return bad
}

// heldUnknown reports whether a ledger keeps v's unknown outcome visible:
// an UNKNOWN record anywhere, or a RETRYABLE agent record of a key that
// provably paid nothing.
func heldUnknown(v *view) bool {
	for _, r := range v.records() {
		if r.State == ledger.StateUnknown {
			return true
		}
	}
	return v.agent != nil && v.agent.State == ledger.StateRetryable && v.paid == 0
}

// maskedUnknown reports whether the agent's answer is the proxy's error
// result for an outcome the proxy did not know: the agent's ledger stores
// it FAILED, like any error result.
func maskedUnknown(v *view) bool {
	return v.answer != nil && v.answer.Outcome == journal.OutcomeToolError && v.answer.UpstreamState != ""
}

// unresolved reports whether the agent's last answer leaves v's outcome
// open.
func unresolved(v *view) bool {
	a := v.answer
	if a == nil {
		return true
	}
	return !(a.Outcome == journal.OutcomeSucceeded || (a.Outcome == journal.OutcomeToolError && a.UpstreamState == ""))
}

// reconcile settles every UNKNOWN record of views the way an operator
// would: the server's with "payments -reconcile KEY", which looks in the
// payments table; the proxy's and the agent's with "agentctl ledger
// reconcile KEY --as …", after looking at the payments table too. It
// returns how many records it found UNKNOWN and settled.
func (w *world) reconcile(ctx context.Context, views map[string]*view) (int, error) {
	n := 0
	for _, v := range views {
		as := "failed"
		if v.paid == 1 {
			as = "succeeded"
		}
		if v.server != nil && v.server.State == ledger.StateUnknown {
			out, err := exec.CommandContext(ctx, w.bin.payments, "-db", w.paymentsDB, "-reconcile", v.server.Key).CombinedOutput()
			if err != nil {
				return n, fmt.Errorf("payments -reconcile %s: %w\n%s", v.key, err, out)
			}
			// The server's reconciler (the one it runs by itself) finds the
			// payment, or finds none and lets the key run again.
			want := string(ledger.StateRetryable)
			if v.paid == 1 {
				want = string(ledger.StateSucceeded)
			}
			if !strings.HasPrefix(string(out), want) {
				return n, fmt.Errorf("payments -reconcile %s = %q; want %s (payments: %d)", v.key, out, want, v.paid)
			}
			n++
		}
		for _, l := range []struct {
			rec            *ledger.Record
			target, tenant string
		}{{v.proxy, w.proxyLedger, proxyTenant}, {v.agent, w.agentLedger, agentTenant}} {
			if l.rec == nil || l.rec.State != ledger.StateUnknown {
				continue
			}
			note := fmt.Sprintf("the payments table has %d payment(s) for this key", v.paid)
			out, err := exec.CommandContext(ctx, w.bin.agentctl, "--ledger", l.target, "--tenant", l.tenant,
				"ledger", "reconcile", l.rec.Key, "--as", as, "--tool", "create_payment", "--note", note).CombinedOutput()
			if err != nil {
				return n, fmt.Errorf("agentctl ledger reconcile %s (tenant %s): %w\n%s", v.key, l.tenant, err, out)
			}
			n++
		}
	}
	return n, nil
}

// integrity runs PRAGMA integrity_check on every SQLite file.
func (w *world) integrity(ctx context.Context) error {
	for _, path := range w.sqliteFiles {
		db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
		if err != nil {
			return err
		}
		var res string
		err = db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res)
		db.Close()
		if err != nil {
			return fmt.Errorf("integrity_check %s: %w", path, err)
		}
		if res != "ok" {
			return fmt.Errorf("integrity_check %s = %q; want ok", path, res)
		}
	}
	return nil
}

// duplicates lists, over the whole downstream, payments applied more than
// once and keys applied more than once.
func (w *world) duplicates(ctx context.Context) ([]string, error) {
	rows, err := w.down.QueryContext(ctx, `
		SELECT 'payment ' || payment_id, count(*) FROM applied GROUP BY payment_id HAVING count(*) > 1
		UNION ALL
		SELECT 'key ' || idempotency_key, count(*) FROM applied GROUP BY idempotency_key HAVING count(*) > 1`)
	if err != nil {
		return nil, fmt.Errorf("downstream duplicates: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var what string
		var n int
		if err := rows.Scan(&what, &n); err != nil {
			return nil, fmt.Errorf("downstream duplicates: %w", err)
		}
		out = append(out, fmt.Sprintf("%s applied %d times", what, n))
	}
	return out, rows.Err()
}

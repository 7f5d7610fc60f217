package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testResolve checks ledger.Resolve on the store: every verdict, fenced
// in both directions against the owner's late write and a take-over, the
// history and backoff of inconclusive findings, and races between
// resolvers.
func testResolve(t *testing.T, newStore NewStore) {
	found := func(res string) ledger.Finding {
		return ledger.Finding{Verdict: ledger.VerdictFound, Result: json.RawMessage(res), Method: ledger.MethodProbe,
			By: "find_payment", Evidence: "payment p_1 exists for this key"}
	}
	inconclusive := func(ev string) ledger.Finding {
		return ledger.Finding{Verdict: ledger.VerdictUnknown, Method: ledger.MethodReconciler, By: "payments", Evidence: ev}
	}

	t.Run("Verdicts", func(t *testing.T) {
		cases := []struct {
			f      ledger.Finding
			state  ledger.State
			result string // "" for none; "*" for the text result Resolve writes
		}{
			{found(`{"content":[{"type":"text","text":"p_1"}]}`), ledger.StateSucceeded, `{"content":[{"type":"text","text":"p_1"}]}`},
			{ledger.Finding{Verdict: ledger.VerdictFound, Method: ledger.MethodCallback, By: "bank-hook"}, ledger.StateSucceeded, "*"},
			{ledger.Finding{Verdict: ledger.VerdictFailed, Result: json.RawMessage(`{"content":[],"isError":true}`), Method: ledger.MethodReconciler, By: "payments"},
				ledger.StateFailed, `{"content":[],"isError":true}`},
			{ledger.Finding{Verdict: ledger.VerdictNotRun, Method: ledger.MethodPerson, By: "alice", Evidence: "no such payment"}, ledger.StateRetryable, ""},
			{inconclusive("the payments table was unreachable"), ledger.StateUnknown, ""},
		}
		for i, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d", tc.f.Verdict, i), func(t *testing.T) {
				e := newEnv(t, newStore).sub(t)
				rec := e.reach("k1", ledger.StateUnknown)
				e.clock.Advance(time.Second)
				now := e.clock.Now()
				got, err := ledger.Resolve(e.ctx, e.st, rec, tc.f)
				if err != nil || got == nil || got.State != tc.state {
					t.Fatalf("Resolve(%s) = %v, %v; want %s", tc.f.Verdict, stateOf(got), err, tc.state)
				}
				if d := diff(e.mustGet(rec.ID), got); d != "" {
					t.Errorf("Resolve(%s) returned a record that differs from Get: %s", tc.f.Verdict, d)
				}
				got = e.mustGet(rec.ID)
				switch tc.result {
				case "":
					if len(got.Result) != 0 {
						t.Errorf("Resolve(%s): result %s; want none", tc.f.Verdict, got.Result)
					}
				case "*":
					if !strings.Contains(string(got.Result), "bank-hook") {
						t.Errorf("Resolve(%s) without a result stored %s; want a text result naming who found it", tc.f.Verdict, got.Result)
					}
				default:
					if string(got.Result) != tc.result {
						t.Errorf("Resolve(%s): result %s; want %s", tc.f.Verdict, got.Result, tc.result)
					}
				}
				if got.Fence != rec.Fence || got.Owner != rec.Owner {
					t.Errorf("Resolve(%s): fence %d owner %q; want the fence %d and owner %q kept", tc.f.Verdict, got.Fence, got.Owner, rec.Fence, rec.Owner)
				}
				want := ledger.Resolution{Verdict: tc.f.Verdict, Method: tc.f.Method, By: tc.f.By, At: now, Evidence: tc.f.Evidence}
				if got.FindingCount != 1 || len(got.Findings) != 1 || !sameResolution(got.Findings[0], want) {
					t.Errorf("Resolve(%s): %d findings %+v; want one, %+v", tc.f.Verdict, got.FindingCount, got.Findings, want)
				}
				if tc.state == ledger.StateUnknown {
					if got.Reconciled != nil {
						t.Errorf("Resolve(unknown): Reconciled = %+v; want nil", got.Reconciled)
					}
					if !got.UpdatedAt.Equal(rec.UpdatedAt) {
						t.Errorf("Resolve(unknown): UpdatedAt %v; want %v kept (when it became UNKNOWN)", got.UpdatedAt, rec.UpdatedAt)
					}
					if want := now.Add(ledger.ReconcileBackoff); !got.ReconcileAt.Equal(want) {
						t.Errorf("Resolve(unknown): ReconcileAt %v; want %v", got.ReconcileAt, want)
					}
					return
				}
				if got.Reconciled == nil || !sameResolution(*got.Reconciled, want) {
					t.Errorf("Resolve(%s): Reconciled = %+v; want %+v", tc.f.Verdict, got.Reconciled, want)
				}
				if got.Reconciled != nil && !got.Reconciled.Since.Equal(rec.UpdatedAt) {
					t.Errorf("Resolve(%s): Reconciled.Since = %v; want %v, when the record became UNKNOWN", tc.f.Verdict, got.Reconciled.Since, rec.UpdatedAt)
				}
				if got.ErrorKind != ledger.KindReconciled || !strings.Contains(got.ErrorMessage, string(tc.state)) {
					t.Errorf("Resolve(%s): error %s: %s; want kind %s naming %s", tc.f.Verdict, got.ErrorKind, got.ErrorMessage, ledger.KindReconciled, tc.state)
				}
				if !got.UpdatedAt.Equal(now) {
					t.Errorf("Resolve(%s): UpdatedAt %v; want %v", tc.f.Verdict, got.UpdatedAt, now)
				}
			})
		}
	})

	// not_run: the same key runs on its next call, as a new run that is
	// not marked reconciled but keeps its history.
	// A call re-sent from UNKNOWN (Lifecycle.Resend) whose answer is
	// final settles the UNKNOWN: the record keeps the answer as the
	// finding of the re-send, since when it was UNKNOWN. A re-send that
	// was not sent leaves no finding: it says nothing of the first call.
	t.Run("ResentAnswerSettles", func(t *testing.T) {
		for _, tc := range []struct {
			on      ledger.Trigger
			state   ledger.State
			verdict ledger.Verdict // "" for no finding
		}{
			{ledger.OnSucceeded, ledger.StateSucceeded, ledger.VerdictFound},
			{ledger.OnFailed, ledger.StateFailed, ledger.VerdictFailed},
			{ledger.OnNotSent, ledger.StateRetryable, ""},
		} {
			t.Run(string(tc.state), func(t *testing.T) {
				e := newEnv(t, newStore).sub(t)
				rec := e.reach("k-resend", ledger.StateUnknown)
				rec, err := ledger.Resolve(e.ctx, e.st, rec, inconclusive("the payments table was unreachable"))
				if err != nil {
					t.Fatalf("an inconclusive finding first = %v", err)
				}
				e.clock.Advance(time.Second)
				lc := &ledger.Lifecycle{Store: e.st, Owner: "resender", Lease: time.Minute, Now: e.clock.Now}
				again, err := lc.Resend(e.ctx, rec)
				if err != nil {
					t.Fatalf("Resend = %v", err)
				}
				after, _, err := lc.Execute(e.ctx, again, func(context.Context, ledger.Lease) ledger.Report {
					rep := ledger.Report{On: tc.on, Attempts: 1, Resent: ledger.ResentOf(rec, again)}
					if tc.on != ledger.OnNotSent {
						rep.Result = json.RawMessage(`{"content":[{"type":"text","text":"p_1"}]}`)
					}
					return rep
				})
				if err != nil || after.State != tc.state {
					t.Fatalf("the re-sent call's outcome = %v, %v; want %s", stateOf(after), err, tc.state)
				}
				got := e.mustGet(rec.ID)
				if tc.verdict == "" {
					if got.Reconciled != nil || got.FindingCount != rec.FindingCount {
						t.Errorf("a re-send not sent recorded a finding: %+v (count %d, was %d)", got.Reconciled, got.FindingCount, rec.FindingCount)
					}
					return
				}
				r := got.Reconciled
				if r == nil || r.Verdict != tc.verdict || r.Method != ledger.MethodResend || !r.Since.Equal(rec.UpdatedAt) {
					t.Fatalf("Reconciled = %+v; want %s by %s since %v", r, tc.verdict, ledger.MethodResend, rec.UpdatedAt)
				}
				if got.FindingCount != rec.FindingCount+1 || len(got.Findings) != len(rec.Findings)+1 {
					t.Errorf("findings %d (%d kept); want the inconclusive one and the re-send's", got.FindingCount, len(got.Findings))
				}
				if d := diff(got, after); d != "" {
					t.Errorf("Execute returned a record that differs from Get: %s", d)
				}
			})
		}
	})

	t.Run("NotRunRunsOnNextCall", func(t *testing.T) {
		e := newEnv(t, newStore)
		rec := e.reach("k1", ledger.StateUnknown)
		if _, err := ledger.Resolve(e.ctx, e.st, rec, ledger.Finding{Verdict: ledger.VerdictNotRun, Method: ledger.MethodProbe, By: "find_payment"}); err != nil {
			t.Fatalf("Resolve(not_run) = %v", err)
		}
		c, err := e.st.Claim(e.ctx, req("k1", "owner-2"))
		if err != nil || !c.Won || c.Record.State != ledger.StateProcessing || c.Record.Fence != rec.Fence+1 {
			t.Fatalf("Claim after not_run = {Won: %v, %s, fence %d}, %v; want a won claim, PROCESSING at fence %d", c.Won, stateOf(c.Record), fenceOf(c.Record), err, rec.Fence+1)
		}
		got := e.mustGet(rec.ID)
		if got.Reconciled != nil || got.FindingCount != 1 || len(got.Findings) != 1 || !got.ReconcileAt.IsZero() {
			t.Errorf("record run again after not_run: Reconciled %+v, %d findings, due %v; want no resolution, the one finding kept, due at once",
				got.Reconciled, got.FindingCount, got.ReconcileAt)
		}
		// The first owner wakes with its result: its fence is stale.
		_, err = e.st.Transition(e.ctx, ledger.Transition{ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateSucceeded, Fence: rec.Fence, Result: json.RawMessage(`{"late":true}`)})
		if !errors.Is(err, ledger.ErrLeaseLost) && !errors.Is(err, ledger.ErrStateChanged) {
			t.Errorf("the first owner's late result after not_run and a new claim = %v; want ErrLeaseLost", err)
		}
	})

	t.Run("Fenced", func(t *testing.T) {
		late := func(rec *ledger.Record) ledger.Transition {
			return ledger.Transition{ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateSucceeded, Fence: rec.Fence,
				Result: json.RawMessage(`{"owner":"late"}`), AddAttempts: 1}
		}
		t.Run("OwnerLateAfterResolution", func(t *testing.T) {
			e := newEnv(t, newStore).sub(t)
			rec := e.reach("k1", ledger.StateUnknown)
			done, err := ledger.Resolve(e.ctx, e.st, rec, found(`{"found":1}`))
			if err != nil {
				t.Fatalf("Resolve = %v", err)
			}
			if _, err := e.st.Transition(e.ctx, late(rec)); !errors.Is(err, ledger.ErrLeaseLost) && !errors.Is(err, ledger.ErrStateChanged) {
				t.Errorf("the owner's late result after a resolution = %v; want ErrLeaseLost or ErrStateChanged", err)
			}
			if d := diff(e.mustGet(rec.ID), done); d != "" {
				t.Errorf("the owner's late result changed the resolved record: %s", d)
			}
		})
		t.Run("ResolutionAfterOwnerLate", func(t *testing.T) {
			e := newEnv(t, newStore).sub(t)
			rec := e.reach("k1", ledger.StateUnknown)
			owned := e.mustTransition(late(rec))
			for _, f := range []ledger.Finding{found(`{"found":1}`), {Verdict: ledger.VerdictNotRun, Method: ledger.MethodProbe}, inconclusive("nothing seen")} {
				got, err := ledger.Resolve(e.ctx, e.st, rec, f)
				if !errors.Is(err, ledger.ErrStateChanged) {
					t.Errorf("Resolve(%s) after the owner's late result = %v; want ErrStateChanged", f.Verdict, err)
				}
				if got == nil || got.State != ledger.StateSucceeded || string(got.Result) != `{"owner":"late"}` {
					t.Errorf("Resolve(%s) after the owner's late result returned %v; want the record as it is now", f.Verdict, stateOf(got))
				}
			}
			if d := diff(e.mustGet(rec.ID), owned); d != "" {
				t.Errorf("a resolution after the owner's late result changed the record: %s", d)
			}
		})
		t.Run("ResolutionAfterTakeOver", func(t *testing.T) {
			e := newEnv(t, newStore).sub(t)
			rec := e.reach("k1", ledger.StateUnknown)
			resent := e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-2"})
			if _, err := ledger.Resolve(e.ctx, e.st, rec, found(`{"found":1}`)); !errors.Is(err, ledger.ErrLeaseLost) {
				t.Errorf("Resolve after a re-send took the key over = %v; want ErrLeaseLost", err)
			}
			// The re-send ends UNKNOWN again, at its own fence: a finding
			// about the first send's record still changes nothing.
			again := e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "owner-2", Fence: resent.Fence})
			for _, f := range []ledger.Finding{found(`{"found":1}`), inconclusive("nothing seen")} {
				if _, err := ledger.Resolve(e.ctx, e.st, rec, f); !errors.Is(err, ledger.ErrLeaseLost) {
					t.Errorf("Resolve(%s) at the stale fence %d = %v; want ErrLeaseLost", f.Verdict, rec.Fence, err)
				}
			}
			if d := diff(e.mustGet(rec.ID), again); d != "" {
				t.Errorf("a resolution at a stale fence changed the record: %s", d)
			}
			if _, err := ledger.Resolve(e.ctx, e.st, again, found(`{"found":2}`)); err != nil {
				t.Errorf("Resolve at the current fence = %v; want it settled", err)
			}
		})
		t.Run("NotUnknown", func(t *testing.T) {
			e := newEnv(t, newStore).sub(t)
			rec := e.reach("k1", ledger.StateProcessing)
			if _, err := ledger.Resolve(e.ctx, e.st, rec, found(`{}`)); !errors.Is(err, ledger.ErrStateChanged) {
				t.Errorf("Resolve of a PROCESSING record = %v; want ErrStateChanged", err)
			}
			if _, err := ledger.Resolve(e.ctx, e.st, rec, ledger.Finding{Verdict: "maybe", Method: ledger.MethodProbe}); !errors.Is(err, ledger.ErrIllegalTransition) {
				t.Errorf("Resolve with verdict maybe = %v; want ErrIllegalTransition", err)
			}
			if got := e.mustGet(rec.ID); got.State != ledger.StateProcessing || got.FindingCount != 0 {
				t.Errorf("refused Resolves left %s with %d findings; want PROCESSING untouched", got.State, got.FindingCount)
			}
		})
	})

	t.Run("HistoryAndBackoff", func(t *testing.T) {
		e := newEnv(t, newStore)
		rec := e.reach("k1", ledger.StateUnknown)
		total := ledger.MaxFindings + 3
		for i := range total {
			now := e.clock.Advance(time.Second)
			f := inconclusive(fmt.Sprintf("look %d:\n  password=hunter2", i))
			var err error
			if rec, err = ledger.Resolve(e.ctx, e.st, rec, f); err != nil {
				t.Fatalf("Resolve #%d = %v", i, err)
			}
			if want := now.Add(ledger.ReconcileDelay(i + 1)); !rec.ReconcileAt.Equal(want) {
				t.Errorf("after %d inconclusive findings: due %v; want %v", i+1, rec.ReconcileAt, want)
			}
		}
		got := e.mustGet(rec.ID)
		if got.State != ledger.StateUnknown || got.FindingCount != total || len(got.Findings) != ledger.MaxFindings {
			t.Fatalf("after %d findings: %s, count %d, %d kept; want UNKNOWN, %d, the last %d", total, got.State, got.FindingCount, len(got.Findings), total, ledger.MaxFindings)
		}
		first, last := got.Findings[0], got.Findings[len(got.Findings)-1]
		if !strings.HasPrefix(first.Evidence, fmt.Sprintf("look %d:", total-ledger.MaxFindings)) || !strings.HasPrefix(last.Evidence, fmt.Sprintf("look %d:", total-1)) {
			t.Errorf("history runs %q .. %q; want the latest %d findings, oldest first", first.Evidence, last.Evidence, ledger.MaxFindings)
		}
		if strings.Contains(last.Evidence, "hunter2") || strings.Contains(last.Evidence, "\n") {
			t.Errorf("stored evidence %q; want it redacted, on one line", last.Evidence)
		}
		if ledger.ReconcileDelay(total) != ledger.ReconcileBackoffMax || ledger.ReconcileDelay(2) != 2*ledger.ReconcileBackoff {
			t.Errorf("ReconcileDelay(2), (%d) = %v, %v; want %v, capped at %v", total, ledger.ReconcileDelay(2), ledger.ReconcileDelay(total), 2*ledger.ReconcileBackoff, ledger.ReconcileBackoffMax)
		}
		// A finding's own retry time replaces the backoff; a settling
		// finding after them all joins the history.
		now := e.clock.Now()
		f := inconclusive("quiet period not over")
		f.RetryIn = 1500 * time.Millisecond
		if rec, _ = ledger.Resolve(e.ctx, e.st, rec, f); rec == nil || !rec.ReconcileAt.Equal(now.Add(f.RetryIn)) {
			t.Errorf("Resolve with RetryIn %v: due %v; want %v", f.RetryIn, dueOf(rec), now.Add(f.RetryIn))
		}
		done, err := ledger.Resolve(e.ctx, e.st, rec, found(`{"found":1}`))
		if err != nil || done.FindingCount != total+2 || done.Findings[len(done.Findings)-1].Verdict != ledger.VerdictFound {
			t.Errorf("Resolve(found) after the inconclusive ones = %v; want the found finding last in the history", err)
		}
	})

	t.Run("DueList", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.reach("fresh", ledger.StateUnknown) // never tried: due at once
		e.clock.Advance(time.Millisecond)
		soon := e.reach("soon", ledger.StateUnknown)
		later := e.reach("later", ledger.StateUnknown)
		e.reach("done", ledger.StateSucceeded)
		settled := e.reach("settled", ledger.StateUnknown)
		if _, err := ledger.Resolve(e.ctx, e.st, settled, found(`{}`)); err != nil {
			t.Fatal(err)
		}
		f := inconclusive("not yet")
		f.RetryIn = time.Second
		if _, err := ledger.Resolve(e.ctx, e.st, soon, f); err != nil {
			t.Fatal(err)
		}
		if _, err := ledger.Resolve(e.ctx, e.st, later, inconclusive("not yet")); err != nil {
			t.Fatal(err)
		}
		other := req("fresh", "owner-b")
		other.Tenant = "tenant-b"
		e.mustClaim(other)
		e.mustTransition(ledger.Transition{ID: other.ID, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "owner-b", Fence: 1})
		server := req("srv", "owner-s")
		server.Layer = ledger.LayerServer
		e.mustClaim(server)
		e.mustTransition(ledger.Transition{ID: server.ID, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "owner-s", Fence: 1})

		due := func(q ledger.DueQuery, want ...string) {
			t.Helper()
			recs, err := ledger.DueUnknown(e.ctx, e.st, q)
			if err != nil {
				t.Fatalf("DueUnknown(%+v) = %v", q, err)
			}
			got := keys(recs)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("DueUnknown(%+v) = %v; want %v", q, got, want)
			}
			for _, r := range recs {
				if r.State != ledger.StateUnknown {
					t.Errorf("DueUnknown listed %s in %s", r.Key, r.State)
				}
			}
		}
		a := func(key string) string { return tenant + "/" + tool + "/" + key }
		b := func(key string) string { return "tenant-b/" + tool + "/" + key }
		due(ledger.DueQuery{Tenant: tenant}, a("fresh"), a("srv"))
		due(ledger.DueQuery{Tenant: tenant, Layers: []string{""}}, a("fresh"))
		due(ledger.DueQuery{Tenant: tenant, Layers: []string{ledger.LayerServer}}, a("srv"))
		e.clock.Advance(time.Second)
		due(ledger.DueQuery{Tenant: tenant, Layers: []string{""}}, a("fresh"), a("soon"))
		e.clock.Advance(ledger.ReconcileBackoff)
		due(ledger.DueQuery{Tenant: tenant, Layers: []string{""}}, a("fresh"), a("soon"), a("later"))
		due(ledger.DueQuery{Tenant: tenant, Layers: []string{""}, Limit: 2}, a("fresh"), a("soon"))
		due(ledger.DueQuery{Tenant: "tenant-b"}, b("fresh"))
		due(ledger.DueQuery{AllTenants: true, Layers: []string{""}}, a("fresh"), b("fresh"), a("soon"), a("later"))
		for _, q := range []ledger.DueQuery{{}, {Tenant: tenant, AllTenants: true}, {Tenant: "bad tenant"}, {Tenant: tenant, Limit: -1}} {
			if _, err := ledger.DueUnknown(e.ctx, e.st, q); err == nil {
				t.Errorf("DueUnknown(%+v) = nil error; want the query refused", q)
			}
		}
	})

	// A sweep that names its tools sees their due records, however many
	// UNKNOWN records of other tools are due before them.
	t.Run("DueListTools", func(t *testing.T) {
		e := newEnv(t, newStore)
		strand := func(tn, tl, key string) {
			t.Helper()
			r := req(key, "owner-1")
			r.Tenant, r.Tool = tn, tl
			e.mustClaim(r)
			e.mustTransition(ledger.Transition{ID: r.ID, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "owner-1", Fence: 1})
			e.clock.Advance(time.Millisecond)
		}
		for _, k := range []string{"n1", "n2", "n3"} {
			strand(tenant, "no_reconciler", k) // due first, and never settled
		}
		strand(tenant, tool, "p1")
		strand("tenant-b", tool, "p2")
		strand(tenant, "refund", "r1")
		strand(tenant, tool, "p3")
		due := func(q ledger.DueQuery, want ...string) {
			t.Helper()
			recs, err := ledger.DueUnknown(e.ctx, e.st, q)
			if err != nil {
				t.Fatalf("DueUnknown(%+v) = %v", q, err)
			}
			if got := keys(recs); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("DueUnknown(%+v) = %v; want %v", q, got, want)
			}
		}
		a := func(tl, key string) string { return tenant + "/" + tl + "/" + key }
		due(ledger.DueQuery{Tenant: tenant, Limit: 2}, a("no_reconciler", "n1"), a("no_reconciler", "n2"))
		due(ledger.DueQuery{Tenant: tenant, Tools: []string{tool}, Limit: 2}, a(tool, "p1"), a(tool, "p3"))
		due(ledger.DueQuery{Tenant: tenant, Tools: []string{"refund", tool, tool}}, a(tool, "p1"), a("refund", "r1"), a(tool, "p3"))
		due(ledger.DueQuery{AllTenants: true, Tools: []string{tool}, Layers: []string{""}}, a(tool, "p1"), "tenant-b/"+tool+"/p2", a(tool, "p3"))
		due(ledger.DueQuery{AllTenants: true, Tools: []string{tool, "refund"}, Limit: 2}, a(tool, "p1"), "tenant-b/"+tool+"/p2")
		due(ledger.DueQuery{Tenant: tenant, Tools: []string{tool}, Layers: []string{ledger.LayerServer}})
		due(ledger.DueQuery{Tenant: tenant, Tools: []string{"nothing_here"}})
		tooMany := make([]string, ledger.MaxDueTools+1)
		for i := range tooMany {
			tooMany[i] = fmt.Sprintf("tool_%d", i)
		}
		for _, q := range []ledger.DueQuery{{Tenant: tenant, Tools: []string{""}}, {Tenant: tenant, Tools: tooMany}} {
			if _, err := ledger.DueUnknown(e.ctx, e.st, q); err == nil {
				t.Errorf("DueUnknown(%d tools %q...) = nil error; want the query refused", len(q.Tools), q.Tools[0])
			}
		}
	})

	// One tenant's finding never reaches another tenant's record of the
	// same tool and key.
	t.Run("Tenant", func(t *testing.T) {
		e := newEnv(t, newStore)
		recA := e.reach("shared", ledger.StateUnknown)
		b := req("shared", "owner-b")
		b.Tenant = "tenant-b"
		e.mustClaim(b)
		recB := e.mustTransition(ledger.Transition{ID: b.ID, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "owner-b", Fence: 1})
		if _, err := ledger.Resolve(e.ctx, e.st, recA, found(`{"a":1}`)); err != nil {
			t.Fatal(err)
		}
		if d := diff(e.mustGet(b.ID), recB); d != "" || e.mustGet(b.ID).FindingCount != 0 {
			t.Errorf("tenant-a's resolution changed tenant-b's record: %s", d)
		}
		forged := *recA
		forged.Tenant, forged.State = "tenant-c", ledger.StateUnknown
		if _, err := ledger.Resolve(e.ctx, e.st, &forged, found(`{"c":1}`)); err == nil {
			t.Errorf("Resolve of a record no tenant-c has = nil error; want it refused")
		}
	})

	t.Run("Race", func(t *testing.T) {
		const resolvers = 8
		t.Run("Settling", func(t *testing.T) {
			e := newEnv(t, newStore).sub(t)
			rec := e.reach("k1", ledger.StateUnknown)
			var won, lost atomic.Int32
			var wg sync.WaitGroup
			results := make([]string, resolvers)
			for i := range resolvers {
				results[i] = fmt.Sprintf(`{"by":%d}`, i)
				wg.Go(func() {
					f := found(results[i])
					if i%2 == 1 {
						f = ledger.Finding{Verdict: ledger.VerdictNotRun, Method: ledger.MethodProbe}
					}
					_, err := ledger.Resolve(e.ctx, e.st, rec, f)
					switch {
					case err == nil:
						won.Add(1)
					case errors.Is(err, ledger.ErrStateChanged):
						lost.Add(1)
					default:
						t.Errorf("losing Resolve = %v; want ErrStateChanged", err)
					}
				})
			}
			// The owner's late result races them too.
			var ownerWon atomic.Int32
			wg.Go(func() {
				if _, err := e.st.Transition(e.ctx, ledger.Transition{ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateSucceeded, Fence: rec.Fence, Result: json.RawMessage(`{"owner":1}`)}); err == nil {
					ownerWon.Add(1)
				}
			})
			wg.Wait()
			if n := won.Load() + ownerWon.Load(); n != 1 {
				t.Fatalf("%d of %d resolvers and the owner settled the record; want exactly 1", n, resolvers)
			}
			got := e.mustGet(rec.ID)
			if won.Load() == 1 && got.FindingCount != 1 {
				t.Errorf("after the race: %d findings; want only the winner's", got.FindingCount)
			}
		})
		t.Run("Inconclusive", func(t *testing.T) {
			e := newEnv(t, newStore).sub(t)
			rec := e.reach("k1", ledger.StateUnknown)
			var ok atomic.Int32
			var wg sync.WaitGroup
			for i := range resolvers {
				wg.Go(func() {
					if _, err := ledger.Resolve(e.ctx, e.st, rec, inconclusive(fmt.Sprintf("look %d", i))); err != nil {
						t.Errorf("Resolve(unknown) #%d = %v; want it recorded", i, err)
						return
					}
					ok.Add(1)
				})
			}
			wg.Wait()
			got := e.mustGet(rec.ID)
			seen := map[string]bool{}
			for _, f := range got.Findings {
				seen[f.Evidence] = true
			}
			if int(ok.Load()) != resolvers || got.FindingCount != resolvers || len(seen) != resolvers {
				t.Errorf("%d concurrent inconclusive findings: %d recorded, count %d, %d distinct kept; want all %d",
					resolvers, ok.Load(), got.FindingCount, len(seen), resolvers)
			}
		})
	})
}

func sameResolution(a, b ledger.Resolution) bool {
	return a.Verdict == b.Verdict && a.Method == b.Method && a.By == b.By && a.At.Equal(b.At) && a.Evidence == b.Evidence
}

func dueOf(r *ledger.Record) time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.ReconcileAt
}

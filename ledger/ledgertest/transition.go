package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func testTransition(t *testing.T, newStore NewStore) {
	// Every pair of states, legal or not, as the one table in ledger says.
	t.Run("Table", func(t *testing.T) {
		e := newEnv(t, newStore)
		for _, from := range ledger.States {
			for _, to := range ledger.States {
				name := fmt.Sprintf("%s_to_%s", from, to)
				t.Run(name, func(t *testing.T) {
					e := e.sub(t)
					key := "k." + name
					before := e.reach(key, from)
					now := e.clock.Advance(time.Second)
					tr := ledger.Transition{ID: id(key), From: from, To: to, Owner: before.Owner,
						Lease: time.Minute, AddAttempts: 1}
					if to == ledger.StateProcessing {
						tr.Owner = "owner-2"
					}
					got, err := e.st.Transition(e.ctx, tr)
					if ledger.CheckTransition(from, to) != nil {
						if !errors.Is(err, ledger.ErrIllegalTransition) {
							t.Fatalf("Transition(%q, %s -> %s) = %v; want ErrIllegalTransition", key, from, to, err)
						}
						if d := diff(e.mustGet(tr.ID), before); d != "" {
							t.Errorf("illegal Transition(%q, %s -> %s) changed the record: %s", key, from, to, d)
						}
						return
					}
					if err != nil {
						t.Fatalf("Transition(%q, %s -> %s) = %v; want success", key, from, to, err)
					}
					want := *before
					want.State, want.Attempts, want.UpdatedAt = to, before.Attempts+1, now
					want.LeaseUntil = time.Time{}
					if to == ledger.StateProcessing {
						want.Owner, want.LeaseUntil = "owner-2", now.Add(time.Minute)
					}
					if d := diff(got, &want); d != "" {
						t.Errorf("Transition(%q, %s -> %s) returned: %s", key, from, to, d)
					}
					if d := diff(e.mustGet(tr.ID), &want); d != "" {
						t.Errorf("Get(%q) after %s -> %s: %s", key, from, to, d)
					}
				})
			}
		}
	})

	// The table is consulted before storage: an illegal edge fails the
	// same way whether or not the record exists.
	t.Run("IllegalBeforeStorage", func(t *testing.T) {
		e := newEnv(t, newStore)
		cases := []struct{ from, to ledger.State }{
			{ledger.StateSucceeded, ledger.StateProcessing},
			{ledger.StateProcessing, ledger.StateProcessing},
			{ledger.StateDenied, ledger.StateSucceeded},
			{"", ledger.StateSucceeded},
			{"BOGUS", ledger.StateFailed},
			{ledger.StateProcessing, "BOGUS"},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s_to_%s", tc.from, tc.to), func(t *testing.T) {
				_, err := e.st.Transition(e.ctx, ledger.Transition{ID: id("missing"), From: tc.from, To: tc.to, Owner: "owner-1"})
				if !errors.Is(err, ledger.ErrIllegalTransition) {
					t.Errorf("Transition(%q, %s -> %s) = %v; want ErrIllegalTransition", "missing", tc.from, tc.to, err)
				}
			})
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, err := e.st.Transition(e.ctx, ledger.Transition{ID: id("missing"), From: ledger.StateRetryable, To: ledger.StateProcessing, Owner: "owner-1"})
		if !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Transition(%q) of a missing record = %v; want ErrNotFound", "missing", err)
		}
		if _, err := e.st.Get(e.ctx, id("missing")); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get(%q) = %v; want ErrNotFound", "missing", err)
		}
	})

	t.Run("StateChanged", func(t *testing.T) {
		cases := []struct {
			name     string
			state    ledger.State
			from, to ledger.State
		}{
			{"retryable expected, succeeded found", ledger.StateSucceeded, ledger.StateRetryable, ledger.StateProcessing},
			{"unknown expected, processing found", ledger.StateProcessing, ledger.StateUnknown, ledger.StateSucceeded},
			{"pending expected, denied found", ledger.StateDenied, ledger.StatePendingApproval, ledger.StateProcessing},
			{"unknown expected, failed found", ledger.StateFailed, ledger.StateUnknown, ledger.StateFailed},
		}
		e := newEnv(t, newStore)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.sub(t)
				key := fmt.Sprintf("k%d", i)
				before := e.reach(key, tc.state)
				_, err := e.st.Transition(e.ctx, ledger.Transition{ID: id(key), From: tc.from, To: tc.to, Owner: "owner-1"})
				if !errors.Is(err, ledger.ErrStateChanged) {
					t.Errorf("Transition(%q, %s -> %s) of a %s record = %v; want ErrStateChanged", key, tc.from, tc.to, tc.state, err)
				}
				if d := diff(e.mustGet(id(key)), before); d != "" {
					t.Errorf("failed compare-and-set changed the record: %s", d)
				}
			})
		}
	})

	t.Run("Fields", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.NeedsApproval = true
		e.mustClaim(r)
		at := e.clock.Advance(time.Second)
		approval := &ledger.Approval{Decision: ledger.DecisionApproved, By: "alice", At: at, Reason: "looks right"}
		got := e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StatePendingApproval, To: ledger.StateProcessing,
			Owner: "owner-2", Approval: approval})
		if !sameApproval(got.Approval, approval) || got.Owner != "owner-2" {
			t.Errorf("approve: Approval %+v owner %q; want %+v owner %q", got.Approval, got.Owner, approval, "owner-2")
		}
		result := json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":true}`)
		got = e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateFailed,
			Owner: "owner-2", Result: result, Compacted: true, ErrorKind: "tool_error", ErrorMessage: "card declined", AddAttempts: 2})
		want := e.mustGet(id("k1"))
		if d := diff(got, want); d != "" {
			t.Errorf("Transition's record differs from Get's: %s", d)
		}
		if string(got.Result) != string(result) || !got.Compacted || got.ErrorKind != "tool_error" ||
			got.ErrorMessage != "card declined" || got.Attempts != 2 || got.Owner != "owner-2" {
			t.Errorf("FAILED record = result %s compacted %v error %q/%q attempts %d owner %q; want the transition's values",
				got.Result, got.Compacted, got.ErrorKind, got.ErrorMessage, got.Attempts, got.Owner)
		}
		if !sameApproval(got.Approval, approval) {
			t.Errorf("a transition without Approval dropped the stored one: %+v", got.Approval)
		}
	})

	t.Run("ReconcileKeepsAndClears", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.mustClaim(req("k1", "owner-1"))
		e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateUnknown,
			Owner: "owner-1", ErrorKind: "ambiguous", ErrorMessage: "deadline after send", AddAttempts: 1})
		// A re-send under a fresh lease starts without the last error.
		got := e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateUnknown, To: ledger.StateProcessing, Owner: "owner-2"})
		if got.ErrorKind != "" || got.ErrorMessage != "" || got.Owner != "owner-2" {
			t.Errorf("UNKNOWN -> PROCESSING kept error %q/%q owner %q; want the error cleared and owner-2", got.ErrorKind, got.ErrorMessage, got.Owner)
		}
		got = e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "owner-2", Result: json.RawMessage(`{"id":7}`), AddAttempts: 1})
		if got.Attempts != 2 || string(got.Result) != `{"id":7}` {
			t.Errorf("after re-send: attempts %d result %s; want 2 and the result", got.Attempts, got.Result)
		}
	})
}

func testLease(t *testing.T, newStore NewStore) {
	t.Run("StaleOwner", func(t *testing.T) {
		cases := []struct {
			name  string
			setup func(e *env, key string) // leaves owner-1's lease stale
		}{
			{"another owner", func(e *env, key string) {
				e.mustClaim(req(key, "owner-2"))
			}},
			{"taken over after RETRYABLE", func(e *env, key string) {
				e.reach(key, ledger.StateRetryable)
				e.mustClaim(req(key, "owner-2"))
			}},
			{"expired to UNKNOWN", func(e *env, key string) {
				r := req(key, "owner-1")
				r.Lease = 10 * time.Second
				e.mustClaim(r)
				e.clock.Advance(10 * time.Second)
				if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
					e.t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
				}
			}},
			{"finished already", func(e *env, key string) {
				e.reach(key, ledger.StateSucceeded)
			}},
		}
		e := newEnv(t, newStore)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.sub(t)
				key := fmt.Sprintf("k%d", i)
				tc.setup(e, key)
				before := e.mustGet(id(key))
				_, err := e.st.Transition(e.ctx, ledger.Transition{ID: id(key), From: ledger.StateProcessing, To: ledger.StateSucceeded,
					Owner: "owner-1", Result: json.RawMessage(`{}`)})
				if !errors.Is(err, ledger.ErrLeaseLost) {
					t.Errorf("Transition(%q) by stale owner-1 = %v; want ErrLeaseLost", key, err)
				}
				if err := e.st.Renew(e.ctx, id(key), "owner-1", time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
					t.Errorf("Renew(%q) by stale owner-1 = %v; want ErrLeaseLost", key, err)
				}
				if d := diff(e.mustGet(id(key)), before); d != "" {
					t.Errorf("stale owner changed the record: %s", d)
				}
			})
		}
		if err := e.st.Renew(e.ctx, id("missing"), "owner-1", time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Renew(%q) of a missing record = %v; want ErrLeaseLost", "missing", err)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		short := req("short", "owner-1")
		short.Lease = 10 * time.Second
		e.mustClaim(short)
		long := req("long", "owner-1")
		long.Lease = time.Minute
		e.mustClaim(long)
		others := map[string]*ledger.Record{}
		for _, st := range []ledger.State{ledger.StatePendingApproval, ledger.StateSucceeded, ledger.StateRetryable} {
			others[string(st)] = e.reach("other-"+string(st), st)
		}
		e.clock.Advance(10*time.Second - time.Microsecond)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 0 {
			t.Fatalf("ExpireLeases() a microsecond before the lease ends = %d, %v; want 0", n, err)
		}
		now := e.clock.Advance(time.Microsecond)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
			t.Fatalf("ExpireLeases() as the lease ends = %d, %v; want 1", n, err)
		}
		got := e.mustGet(id("short"))
		if got.State != ledger.StateUnknown || got.ErrorKind != ledger.KindLeaseExpired || !got.UpdatedAt.Equal(now) || !got.LeaseUntil.IsZero() {
			t.Errorf("expired record = %s kind %q updated %v lease %v; want UNKNOWN %q updated %v without a lease",
				got.State, got.ErrorKind, got.UpdatedAt, got.LeaseUntil, ledger.KindLeaseExpired, now)
		}
		if got := e.mustGet(id("long")); got.State != ledger.StateProcessing {
			t.Errorf("record with a live lease = %s; want PROCESSING", got.State)
		}
		for key, want := range others {
			if d := diff(e.mustGet(id("other-"+key)), want); d != "" {
				t.Errorf("ExpireLeases changed a %s record: %s", key, d)
			}
		}
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 0 {
			t.Errorf("second ExpireLeases() = %d, %v; want 0", n, err)
		}
		c, err := e.st.Claim(e.ctx, short)
		if err != nil || c.Won || c.Record.State != ledger.StateUnknown {
			t.Errorf("Claim of an expired lease = {Won: %v, State: %s}, %v; want a follower seeing UNKNOWN, never a re-execution", c.Won, stateOf(c.Record), err)
		}
	})

	t.Run("Renew", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.Lease = 10 * time.Second
		e.mustClaim(r)
		now := e.clock.Advance(5 * time.Second)
		if err := e.st.Renew(e.ctx, id("k1"), "owner-1", 10*time.Second); err != nil {
			t.Fatalf("Renew(%q) by the owner = %v; want nil", "k1", err)
		}
		if got := e.mustGet(id("k1")); !got.LeaseUntil.Equal(now.Add(10 * time.Second)) {
			t.Errorf("LeaseUntil after Renew = %v; want %v", got.LeaseUntil, now.Add(10*time.Second))
		}
		e.clock.Advance(6 * time.Second) // past the first lease
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 0 {
			t.Errorf("ExpireLeases() within the renewed lease = %d, %v; want 0", n, err)
		}
		e.clock.Advance(4 * time.Second)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
			t.Errorf("ExpireLeases() at the end of the renewed lease = %d, %v; want 1", n, err)
		}
		if err := e.st.Renew(e.ctx, id("k1"), "owner-1", 0); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Renew(%q) after expiry = %v; want ErrLeaseLost", "k1", err)
		}
	})
}

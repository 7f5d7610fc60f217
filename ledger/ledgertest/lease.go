package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func testLease(t *testing.T, newStore NewStore) {
	t.Run("StaleOwner", func(t *testing.T) {
		cases := []struct {
			name string
			// setup leaves the lease it returns stale, on a record that
			// was in state from while the lease was held.
			setup func(e *env, key string) (stale ledger.Lease, from ledger.State)
		}{
			{"another owner, same fence", func(e *env, key string) (ledger.Lease, ledger.State) {
				rec := e.mustClaim(req(key, "owner-2"))
				return ledger.Lease{ID: rec.ID, Owner: "owner-1", Fence: rec.Fence}, ledger.StateProcessing
			}},
			{"same owner, stale fence", func(e *env, key string) (ledger.Lease, ledger.State) {
				first := e.reach(key, ledger.StateRetryable)
				e.mustClaim(req(key, "owner-1"))
				return ledger.LeaseOf(first), ledger.StateProcessing
			}},
			{"taken over after RETRYABLE", func(e *env, key string) (ledger.Lease, ledger.State) {
				first := e.reach(key, ledger.StateRetryable)
				e.mustClaim(req(key, "owner-2"))
				return ledger.LeaseOf(first), ledger.StateProcessing
			}},
			{"expired to UNKNOWN", func(e *env, key string) (ledger.Lease, ledger.State) {
				r := req(key, "owner-1")
				r.Lease = 10 * time.Second
				first := e.mustClaim(r)
				e.clock.Advance(10 * time.Second)
				if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
					e.t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
				}
				return ledger.LeaseOf(first), ledger.StateProcessing
			}},
			{"finished already", func(e *env, key string) (ledger.Lease, ledger.State) {
				done := e.reach(key, ledger.StateSucceeded)
				return ledger.LeaseOf(done), ledger.StateProcessing
			}},
			{"approval by another owner", func(e *env, key string) (ledger.Lease, ledger.State) {
				r := req(key, "owner-2")
				r.NeedsApproval = true
				rec := e.mustClaim(r)
				return ledger.Lease{ID: rec.ID, Owner: "owner-1", Fence: rec.Fence}, ledger.StatePendingApproval
			}},
			{"approval expired to REJECTED", func(e *env, key string) (ledger.Lease, ledger.State) {
				r := req(key, "owner-1")
				r.NeedsApproval = true
				r.Lease = 10 * time.Second
				first := e.mustClaim(r)
				e.clock.Advance(10 * time.Second)
				if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
					e.t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
				}
				return ledger.LeaseOf(first), ledger.StatePendingApproval
			}},
			{"approval denied already", func(e *env, key string) (ledger.Lease, ledger.State) {
				denied := e.reach(key, ledger.StateDenied)
				return ledger.LeaseOf(denied), ledger.StatePendingApproval
			}},
		}
		e := newEnv(t, newStore)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.sub(t)
				key := fmt.Sprintf("k%d", i)
				stale, from := tc.setup(e, key)
				e.clock.Advance(time.Second)
				before := e.mustGet(id(key))
				tr := ledger.Transition{ID: stale.ID, From: from, To: ledger.StateSucceeded, Owner: stale.Owner, Fence: stale.Fence,
					Result: json.RawMessage(`{}`), AddAttempts: 1}
				if from == ledger.StatePendingApproval {
					tr.To, tr.Result = ledger.StateProcessing, nil
				}
				if _, err := e.st.Transition(e.ctx, tr); !errors.Is(err, ledger.ErrLeaseLost) {
					t.Errorf("Transition(%q, %s -> %s) by stale %s at fence %d = %v; want ErrLeaseLost", key, tr.From, tr.To, stale.Owner, stale.Fence, err)
				}
				if err := e.st.Renew(e.ctx, stale, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
					t.Errorf("Renew(%q) by stale %s at fence %d = %v; want ErrLeaseLost", key, stale.Owner, stale.Fence, err)
				}
				if d := diff(e.mustGet(id(key)), before); d != "" {
					t.Errorf("stale owner changed the record: %s", d)
				}
			})
		}
		if err := e.st.Renew(e.ctx, ledger.Lease{ID: id("missing"), Owner: "owner-1", Fence: 1}, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Renew(%q) of a missing record = %v; want ErrLeaseLost", "missing", err)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		e := newEnv(t, newStore)
		short := req("short", "owner-1")
		short.Lease = 10 * time.Second
		shortRec := e.mustClaim(short)
		long := req("long", "owner-1")
		long.Lease = time.Minute
		e.mustClaim(long)
		shortApproval := req("short-approval", "owner-1")
		shortApproval.Lease = 10 * time.Second
		shortApproval.NeedsApproval = true
		approvalRec := e.mustClaim(shortApproval)
		others := map[string]*ledger.Record{}
		for _, st := range []ledger.State{ledger.StatePendingApproval, ledger.StateSucceeded, ledger.StateRetryable, ledger.StateRejected} {
			others[string(st)] = e.reach("other-"+string(st), st)
		}
		e.clock.Advance(10*time.Second - time.Microsecond)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 0 {
			t.Fatalf("ExpireLeases() a microsecond before the leases end = %d, %v; want 0", n, err)
		}
		now := e.clock.Advance(time.Microsecond)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 2 {
			t.Fatalf("ExpireLeases() as the leases end = %d, %v; want 2 (one PROCESSING, one PENDING_APPROVAL)", n, err)
		}
		got := e.mustGet(id("short"))
		if got.State != ledger.StateUnknown || got.ErrorKind != ledger.KindLeaseExpired || !got.UpdatedAt.Equal(now) || !got.LeaseUntil.IsZero() {
			t.Errorf("expired record = %s kind %q updated %v lease %v; want UNKNOWN %q updated %v without a lease",
				got.State, got.ErrorKind, got.UpdatedAt, got.LeaseUntil, ledger.KindLeaseExpired, now)
		}
		if got.Owner != shortRec.Owner || got.Fence != shortRec.Fence {
			t.Errorf("expired record owner %q fence %d; want the last owner's %q and fence %d kept for its late result",
				got.Owner, got.Fence, shortRec.Owner, shortRec.Fence)
		}
		got = e.mustGet(id("short-approval"))
		if got.State != ledger.StateRejected || got.ErrorKind != ledger.KindApprovalExpired || !got.UpdatedAt.Equal(now) ||
			!got.LeaseUntil.IsZero() || got.Owner != approvalRec.Owner || got.Fence != approvalRec.Fence {
			t.Errorf("expired approval = %s kind %q updated %v lease %v owner %q fence %d; want REJECTED %q updated %v without a lease, owner %q fence %d",
				got.State, got.ErrorKind, got.UpdatedAt, got.LeaseUntil, got.Owner, got.Fence,
				ledger.KindApprovalExpired, now, approvalRec.Owner, approvalRec.Fence)
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
		for _, approval := range []bool{false, true} {
			name := string(ledger.StateProcessing)
			expired := ledger.StateUnknown
			if approval {
				name, expired = string(ledger.StatePendingApproval), ledger.StateRejected
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, newStore)
				r := req("k1", "owner-1")
				r.Lease = 10 * time.Second
				r.NeedsApproval = approval
				l := ledger.LeaseOf(e.mustClaim(r))
				now := e.clock.Advance(5 * time.Second)
				if err := e.st.Renew(e.ctx, l, 10*time.Second); err != nil {
					t.Fatalf("Renew(%q) by the owner = %v; want nil", "k1", err)
				}
				if got := e.mustGet(id("k1")); !got.LeaseUntil.Equal(now.Add(10*time.Second)) || got.Fence != l.Fence || got.Owner != l.Owner {
					t.Errorf("after Renew: LeaseUntil %v owner %q fence %d; want %v, the same owner %q and fence %d",
						got.LeaseUntil, got.Owner, got.Fence, now.Add(10*time.Second), l.Owner, l.Fence)
				}
				e.clock.Advance(6 * time.Second) // past the first lease
				if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 0 {
					t.Errorf("ExpireLeases() within the renewed lease = %d, %v; want 0", n, err)
				}
				e.clock.Advance(4 * time.Second)
				if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
					t.Errorf("ExpireLeases() at the end of the renewed lease = %d, %v; want 1", n, err)
				}
				if got := e.mustGet(id("k1")); got.State != expired {
					t.Errorf("record after its renewed lease ended = %s; want %s", got.State, expired)
				}
				if err := e.st.Renew(e.ctx, l, 0); !errors.Is(err, ledger.ErrLeaseLost) {
					t.Errorf("Renew(%q) after expiry = %v; want ErrLeaseLost", "k1", err)
				}
			})
		}
	})
}

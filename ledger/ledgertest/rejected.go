package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testRejected checks REJECTED: nothing ran, so the next claim of the key,
// with any arguments, is a new operation under a new fence.
func testRejected(t *testing.T, newStore NewStore) {
	// refused claims key for approval, approves it and has the server
	// refuse the arguments: a REJECTED record holding an approval, an
	// error and attempts, all of which a re-claim must deal with.
	refused := func(e *env, key string) *ledger.Record {
		e.t.Helper()
		r := req(key, "owner-1")
		r.NeedsApproval = true
		r.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		rec := e.mustClaim(r)
		rec = e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StatePendingApproval, To: ledger.StateProcessing,
			Owner: rec.Owner, Fence: rec.Fence, Approval: &ledger.Approval{Decision: ledger.DecisionApproved, By: "alice", At: e.clock.Now()}})
		return e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StateProcessing, To: ledger.StateRejected,
			Owner: rec.Owner, Fence: rec.Fence, ErrorKind: ledger.KindRefused,
			ErrorMessage: "invalid params: payee: want string", AddAttempts: 1})
	}

	t.Run("ReclaimWithOtherArguments", func(t *testing.T) {
		for _, approval := range []bool{false, true} {
			t.Run(fmt.Sprintf("NeedsApproval=%v", approval), func(t *testing.T) {
				e := newEnv(t, newStore)
				before := refused(e, "k1")
				now := e.clock.Advance(time.Minute)
				again := ledger.ClaimRequest{ID: id("k1"), Session: "session-2", Fingerprint: fp("corrected"),
					Arguments: json.RawMessage(`{"payee":"1234"}`), Owner: "owner-2", Lease: 20 * time.Second,
					NeedsApproval: approval, Retention: 2 * time.Hour, ReusePolicy: ledger.Verify, SpanID: "00f067aa0ba902b7"}
				got := e.mustClaim(again)
				want := &ledger.Record{ID: again.ID, Session: again.Session, Fingerprint: again.Fingerprint, Arguments: again.Arguments,
					State: ledger.StateProcessing, Attempts: before.Attempts, Fence: before.Fence + 1, Owner: "owner-2",
					LeaseUntil: now.Add(20 * time.Second), SpanID: again.SpanID, ReusePolicy: ledger.Verify,
					CreatedAt: before.CreatedAt, UpdatedAt: now, ExpiresAt: now.Add(2 * time.Hour)}
				if approval {
					want.State = ledger.StatePendingApproval
				}
				if d := diff(got, want); d != "" {
					t.Errorf("Claim of a REJECTED record with other arguments: %s", d)
				}
				if d := diff(e.mustGet(again.ID), want); d != "" {
					t.Errorf("Get after the re-claim: %s", d)
				}
				// The key now belongs to the corrected call.
				c, err := e.st.Claim(e.ctx, req("k1", "owner-3"))
				if !errors.Is(err, ledger.ErrKeyReused) || c.Won {
					t.Errorf("Claim with the first arguments after the re-claim = {Won: %v}, %v; want ErrKeyReused", c.Won, err)
				}
				c, err = e.st.Claim(e.ctx, again)
				if err != nil || c.Won || fenceOf(c.Record) != want.Fence {
					t.Errorf("repeat of the re-claim = {Won: %v, Fence: %d}, %v; want a follower at fence %d", c.Won, fenceOf(c.Record), err, want.Fence)
				}
			})
		}
	})

	t.Run("ReclaimWithSameArguments", func(t *testing.T) {
		e := newEnv(t, newStore)
		before := e.reach("k1", ledger.StateRejected)
		got := e.mustClaim(req("k1", "owner-2"))
		if got.State != ledger.StateProcessing || got.Owner != "owner-2" || got.Fence != before.Fence+1 || got.Attempts != before.Attempts {
			t.Errorf("re-claim = %s owner %q fence %d attempts %d; want PROCESSING owner-2 fence %d attempts %d",
				got.State, got.Owner, got.Fence, got.Attempts, before.Fence+1, before.Attempts)
		}
		if _, err := e.st.Transition(e.ctx, ledger.Transition{ID: before.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: before.Owner, Fence: before.Fence}); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Transition by the owner of the rejected call = %v; want ErrLeaseLost", err)
		}
	})

	t.Run("AfterApprovalExpired", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.NeedsApproval = true
		r.Lease = 10 * time.Second
		first := e.mustClaim(r)
		e.clock.Advance(10 * time.Second)
		if n, err := e.st.ExpireLeases(e.ctx); err != nil || n != 1 {
			t.Fatalf("ExpireLeases() = %d, %v; want 1", n, err)
		}
		rejected := e.mustGet(first.ID)
		if rejected.State != ledger.StateRejected || rejected.ErrorKind != ledger.KindApprovalExpired {
			t.Fatalf("approval past its lease = %s %q; want REJECTED %q", rejected.State, rejected.ErrorKind, ledger.KindApprovalExpired)
		}
		if got := ledger.Act(rejected); got != ledger.ActReclaim {
			t.Errorf("Act(expired approval) = %q; want %q", got, ledger.ActReclaim)
		}
		again := req("k1", "owner-2")
		again.Fingerprint = fp("other")
		got := e.mustClaim(again)
		if got.State != ledger.StateProcessing || got.Fingerprint != again.Fingerprint || got.ErrorKind != "" || got.Fence != first.Fence+1 {
			t.Errorf("claim after the approval expired = %s fingerprint %.12s error %q fence %d; want PROCESSING with the new fingerprint, no error, fence %d",
				got.State, got.Fingerprint, got.ErrorKind, got.Fence, first.Fence+1)
		}
	})

	t.Run("OneWinnerOf32", func(t *testing.T) {
		e := newEnv(t, newStore)
		before := e.reach("race", ledger.StateRejected)
		const n = 32
		var (
			won   atomic.Int32
			wg    sync.WaitGroup
			start = make(chan struct{})
			fps   [n]string
			errs  [n]error
		)
		for i := range n {
			fps[i] = fp(fmt.Sprint("corrected-", i%3))
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r := req("race", fmt.Sprintf("owner-%d", i))
				r.Fingerprint = fps[i]
				var c ledger.Claim
				c, errs[i] = e.st.Claim(e.ctx, r)
				if errs[i] == nil && c.Won {
					won.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := won.Load(); got != 1 {
			t.Fatalf("%d concurrent claims of a REJECTED record produced %d winners; want 1", n, got)
		}
		stored := e.mustGet(id("race"))
		if stored.Fence != before.Fence+1 {
			t.Errorf("fence after the race = %d; want %d: one re-claim", stored.Fence, before.Fence+1)
		}
		for i := range n {
			reused := errors.Is(errs[i], ledger.ErrKeyReused)
			switch {
			case fps[i] == stored.Fingerprint && errs[i] != nil:
				t.Errorf("claim %d with the winner's fingerprint = %v; want no error", i, errs[i])
			case fps[i] != stored.Fingerprint && !reused:
				t.Errorf("claim %d with another fingerprint = %v; want ErrKeyReused", i, errs[i])
			}
		}
	})

	// Nothing ran, so there is nothing for a Verify tombstone to guard:
	// a REJECTED record is deleted at the end of its retention.
	t.Run("PurgedWithoutTombstone", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.Retention = time.Hour
		r.ReusePolicy = ledger.Verify
		rec := e.mustClaim(r)
		e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StateProcessing, To: ledger.StateRejected, Owner: rec.Owner, Fence: rec.Fence,
			ErrorKind: ledger.KindRefused})
		now := e.clock.Advance(time.Hour)
		if n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: now}); err != nil || n != 1 {
			t.Fatalf("Purge() of a REJECTED record = %d, %v; want 1", n, err)
		}
		if got, err := e.st.Get(e.ctx, rec.ID); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get after purging a REJECTED Verify record = tombstone %v, %v; want ErrNotFound", got != nil && got.Tombstone, err)
		}
	})
}

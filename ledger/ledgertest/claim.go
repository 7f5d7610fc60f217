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

func testClaim(t *testing.T, newStore NewStore) {
	t.Run("NewRecord", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.Lease = 45 * time.Second
		r.Retention = 2 * time.Hour
		r.TraceID, r.SpanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		got := e.mustClaim(r)
		now := e.clock.Now()
		want := &ledger.Record{
			ID: r.ID, Session: r.Session, Fingerprint: r.Fingerprint, Arguments: r.Arguments,
			State: ledger.StateProcessing, Fence: 1, Owner: "owner-1", LeaseUntil: now.Add(45 * time.Second),
			TraceID: r.TraceID, SpanID: r.SpanID, ReusePolicy: ledger.Reexecute,
			CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(2 * time.Hour),
		}
		if d := diff(got, want); d != "" {
			t.Errorf("Claim(%q) record: %s", r.Key, d)
		}
		if d := diff(e.mustGet(r.ID), want); d != "" {
			t.Errorf("Get(%q) after Claim: %s", r.Key, d)
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		e := newEnv(t, newStore)
		got := e.mustClaim(req("k1", "owner-1"))
		now := e.clock.Now()
		if !got.LeaseUntil.Equal(now.Add(ledger.DefaultLease)) {
			t.Errorf("Claim with zero Lease: LeaseUntil = %v; want now+%v", got.LeaseUntil, ledger.DefaultLease)
		}
		if !got.ExpiresAt.Equal(now.Add(ledger.DefaultRetention)) {
			t.Errorf("Claim with zero Retention: ExpiresAt = %v; want now+%v", got.ExpiresAt, ledger.DefaultRetention)
		}
		if got.ReusePolicy != ledger.Reexecute {
			t.Errorf("Claim with empty ReusePolicy: ReusePolicy = %q; want %q", got.ReusePolicy, ledger.Reexecute)
		}
	})

	t.Run("NeedsApproval", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.NeedsApproval = true
		r.Lease = 30 * time.Second
		got := e.mustClaim(r)
		now := e.clock.Now()
		if got.State != ledger.StatePendingApproval || got.Owner != "owner-1" || got.Fence != 1 || !got.LeaseUntil.Equal(now.Add(30*time.Second)) {
			t.Errorf("Claim(NeedsApproval) = %s owner %q fence %d lease %v; want %s leased by owner-1 at fence 1 until %v",
				got.State, got.Owner, got.Fence, got.LeaseUntil, ledger.StatePendingApproval, now.Add(30*time.Second))
		}
		if d := diff(e.mustGet(r.ID), got); d != "" {
			t.Errorf("Get(%q) after Claim(NeedsApproval): %s", r.Key, d)
		}
		c, err := e.st.Claim(e.ctx, req("k1", "owner-2"))
		if err != nil || c.Won || c.Record.State != ledger.StatePendingApproval {
			t.Errorf("second Claim of a pending record = {Won: %v, State: %v}, %v; want a follower of %s", c.Won, stateOf(c.Record), err, ledger.StatePendingApproval)
		}
	})

	t.Run("Follower", func(t *testing.T) {
		e := newEnv(t, newStore)
		first := e.mustClaim(req("k1", "owner-1"))
		e.clock.Advance(time.Second)
		c, err := e.st.Claim(e.ctx, req("k1", "owner-2"))
		if err != nil || c.Won {
			t.Fatalf("second Claim(%q) = {Won: %v}, %v; want a follower", "k1", c.Won, err)
		}
		if d := diff(c.Record, first); d != "" {
			t.Errorf("follower's record differs from the winner's: %s", d)
		}
		done := e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "owner-1", Fence: first.Fence, Result: json.RawMessage(`{"ok":true}`), AddAttempts: 1})
		c, err = e.st.Claim(e.ctx, req("k1", "owner-3"))
		if err != nil || c.Won {
			t.Fatalf("Claim(%q) after success = {Won: %v}, %v; want a follower", "k1", c.Won, err)
		}
		if d := diff(c.Record, done); d != "" {
			t.Errorf("follower of a succeeded record: %s", d)
		}
	})

	t.Run("KeyReused", func(t *testing.T) {
		for _, st := range ledger.States {
			if st == ledger.StateRejected {
				continue // claimed again with any arguments: see testRejected
			}
			t.Run(string(st), func(t *testing.T) {
				e := newEnv(t, newStore)
				before := e.reach("k1", st)
				e.clock.Advance(time.Second)
				r := req("k1", "owner-2")
				r.Fingerprint = fp("other arguments")
				r.Arguments = json.RawMessage(`{"amount":43}`)
				c, err := e.st.Claim(e.ctx, r)
				if !errors.Is(err, ledger.ErrKeyReused) || c.Won {
					t.Fatalf("Claim(%q) with another fingerprint = {Won: %v}, %v; want ErrKeyReused", r.Key, c.Won, err)
				}
				if d := diff(c.Record, before); d != "" {
					t.Errorf("Claim(%q) with another fingerprint returned a record that is not the stored one: %s", r.Key, d)
				}
				if d := diff(e.mustGet(r.ID), before); d != "" {
					t.Errorf("Claim(%q) with another fingerprint changed the stored record: %s", r.Key, d)
				}
			})
		}
	})

	t.Run("InvalidIdentity", func(t *testing.T) {
		cases := []struct {
			name string
			id   ledger.ID
			want error
		}{
			{"key with space", ledger.ID{Tenant: tenant, Tool: tool, Key: "order 42"}, ledger.ErrInvalidKey},
			{"empty key", ledger.ID{Tenant: tenant, Tool: tool}, ledger.ErrInvalidKey},
			{"key too long", ledger.ID{Tenant: tenant, Tool: tool, Key: string(make([]byte, 256))}, ledger.ErrInvalidKey},
			{"key with unicode", ledger.ID{Tenant: tenant, Tool: tool, Key: "commande-é"}, ledger.ErrInvalidKey},
			{"tenant with slash", ledger.ID{Tenant: "a/b", Tool: tool, Key: "k1"}, ledger.ErrInvalidTenant},
			{"empty tenant", ledger.ID{Tool: tool, Key: "k1"}, ledger.ErrInvalidTenant},
		}
		e := newEnv(t, newStore)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := req("k1", "owner-1")
				r.ID = tc.id
				c, err := e.st.Claim(e.ctx, r)
				if !errors.Is(err, tc.want) || c.Won {
					t.Errorf("Claim(%q) = {Won: %v}, %v; want %v", tc.id.Key, c.Won, err, tc.want)
				}
			})
		}
		r := req("k1", "owner-1")
		r.Tool = ""
		if c, err := e.st.Claim(e.ctx, r); err == nil || c.Won {
			t.Errorf("Claim with an empty tool = {Won: %v}, %v; want an error", c.Won, err)
		}
		p, err := e.st.List(e.ctx, ledger.Filter{Tenant: tenant})
		if err != nil || len(p.Records) != 0 {
			t.Errorf("List after invalid claims = %v, %v; want nothing stored", keys(p.Records), err)
		}
	})

	t.Run("OneWinnerOf64", func(t *testing.T) {
		e := newEnv(t, newStore)
		const n = 64
		var (
			won     atomic.Int32
			wg      sync.WaitGroup
			start   = make(chan struct{})
			claims  [n]ledger.Claim
			errs    [n]error
			winners [n]bool
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				claims[i], errs[i] = e.st.Claim(e.ctx, req("race", fmt.Sprintf("owner-%d", i)))
				if errs[i] == nil && claims[i].Won {
					won.Add(1)
					winners[i] = true
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := won.Load(); got != 1 {
			t.Fatalf("%d concurrent Claim(%q) produced %d winners; want exactly 1", n, "race", got)
		}
		stored := e.mustGet(id("race"))
		for i := range n {
			if errs[i] != nil {
				t.Errorf("Claim(%q) by owner-%d = %v; want no error", "race", i, errs[i])
				continue
			}
			if winners[i] && stored.Owner != fmt.Sprintf("owner-%d", i) {
				t.Errorf("stored owner = %q; want the winner owner-%d", stored.Owner, i)
			}
			if claims[i].Record == nil || claims[i].Record.Owner != stored.Owner {
				t.Errorf("Claim(%q) by owner-%d saw owner %q; want the winner %q", "race", i, ownerOf(claims[i].Record), stored.Owner)
			}
		}
	})

	t.Run("RaceWithTwoFingerprints", func(t *testing.T) {
		e := newEnv(t, newStore)
		const n = 32
		var (
			won   atomic.Int32
			wg    sync.WaitGroup
			start = make(chan struct{})
			fps   [n]string
			errs  [n]error
		)
		for i := range n {
			fps[i] = fp(fmt.Sprint(i % 2))
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
			t.Fatalf("%d concurrent claims with two fingerprints produced %d winners; want 1", n, got)
		}
		winner := e.mustGet(id("race")).Fingerprint
		for i := range n {
			reused := errors.Is(errs[i], ledger.ErrKeyReused)
			switch {
			case fps[i] == winner && errs[i] != nil:
				t.Errorf("claim %d with the winner's fingerprint = %v; want no error", i, errs[i])
			case fps[i] != winner && !reused:
				t.Errorf("claim %d with the other fingerprint = %v; want ErrKeyReused", i, errs[i])
			}
		}
	})

	t.Run("RetryableTakeOver", func(t *testing.T) {
		e := newEnv(t, newStore)
		first := e.mustClaim(req("k1", "owner-1"))
		e.clock.Advance(time.Second)
		e.mustTransition(ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateRetryable,
			Owner: "owner-1", Fence: first.Fence, ErrorKind: "connection_refused", ErrorMessage: "dial tcp: refused", AddAttempts: 1})
		now := e.clock.Advance(time.Second)
		r := req("k1", "owner-2")
		r.Lease = time.Minute
		got := e.mustClaim(r)
		if got.State != ledger.StateProcessing || got.Owner != "owner-2" || !got.LeaseUntil.Equal(now.Add(time.Minute)) {
			t.Errorf("take-over = %s owner %q lease %v; want PROCESSING owner %q lease %v", got.State, got.Owner, got.LeaseUntil, "owner-2", now.Add(time.Minute))
		}
		if got.Attempts != 1 || !got.CreatedAt.Equal(first.CreatedAt) || !got.UpdatedAt.Equal(now) {
			t.Errorf("take-over kept attempts %d created %v updated %v; want 1, %v, %v", got.Attempts, got.CreatedAt, got.UpdatedAt, first.CreatedAt, now)
		}
		if got.ErrorKind != "" || got.ErrorMessage != "" {
			t.Errorf("take-over kept error %q %q; want it cleared for the new execution", got.ErrorKind, got.ErrorMessage)
		}
		if got.Fence != first.Fence+1 {
			t.Errorf("take-over fence = %d; want %d, one more than the first claim's", got.Fence, first.Fence+1)
		}
		if d := diff(e.mustGet(id("k1")), got); d != "" {
			t.Errorf("Get(%q) after take-over: %s", "k1", d)
		}
		if _, err := e.st.Transition(e.ctx, ledger.Transition{ID: id("k1"), From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "owner-1", Fence: first.Fence}); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Transition by the previous owner after a take-over = %v; want ErrLeaseLost", err)
		}
		c, err := e.st.Claim(e.ctx, req("k1", "owner-3"))
		if err != nil || c.Won || c.Record.Owner != "owner-2" {
			t.Errorf("Claim after take-over = {Won: %v, Owner: %q}, %v; want a follower of owner-2", c.Won, ownerOf(c.Record), err)
		}
	})

	t.Run("RetryableTakeOverForApproval", func(t *testing.T) {
		e := newEnv(t, newStore)
		before := e.reach("k1", ledger.StateRetryable)
		now := e.clock.Advance(time.Second)
		r := req("k1", "owner-2")
		r.NeedsApproval = true
		got := e.mustClaim(r)
		want := *before
		want.State, want.Owner, want.Fence = ledger.StatePendingApproval, "owner-2", before.Fence+1
		want.LeaseUntil, want.UpdatedAt, want.ExpiresAt = now.Add(ledger.DefaultLease), now, now.Add(ledger.DefaultRetention)
		if d := diff(got, &want); d != "" {
			t.Errorf("Claim(NeedsApproval) of a RETRYABLE record: %s", d)
		}
		if d := diff(e.mustGet(r.ID), &want); d != "" {
			t.Errorf("Get(%q) after the take-over: %s", r.Key, d)
		}
	})

	t.Run("RetryableOtherFingerprint", func(t *testing.T) {
		e := newEnv(t, newStore)
		before := e.reach("k1", ledger.StateRetryable)
		r := req("k1", "owner-2")
		r.Fingerprint = fp("other")
		c, err := e.st.Claim(e.ctx, r)
		if !errors.Is(err, ledger.ErrKeyReused) || c.Won {
			t.Fatalf("Claim of a RETRYABLE record with another fingerprint = {Won: %v}, %v; want ErrKeyReused", c.Won, err)
		}
		if d := diff(e.mustGet(id("k1")), before); d != "" {
			t.Errorf("RETRYABLE record changed by a reused key: %s", d)
		}
	})
}

func stateOf(r *ledger.Record) ledger.State {
	if r == nil {
		return ""
	}
	return r.State
}

func ownerOf(r *ledger.Record) string {
	if r == nil {
		return "<nil record>"
	}
	return r.Owner
}

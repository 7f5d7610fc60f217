package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func testRetention(t *testing.T, newStore NewStore) {
	t.Run("Purge", func(t *testing.T) {
		e := newEnv(t, newStore)
		made := map[ledger.State]*ledger.Record{}
		for _, st := range ledger.States {
			r := req("k-"+string(st), "owner-1")
			r.Retention = time.Hour
			r.Lease = 10 * time.Hour // PROCESSING outlives its retention
			r.NeedsApproval = st == ledger.StatePendingApproval || st == ledger.StateDenied
			e.mustClaim(r)
			made[st] = e.reachFrom(r.Key, st)
		}
		fresh := e.reach("fresh", ledger.StateSucceeded) // 24h retention
		e.clock.Advance(time.Hour - time.Microsecond)
		if n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: e.clock.Now()}); err != nil || n != 0 {
			t.Fatalf("Purge() before retention ends = %d, %v; want 0", n, err)
		}
		e.clock.Advance(time.Microsecond)
		var settled []ledger.State
		for _, st := range ledger.States {
			if st.Settled() {
				settled = append(settled, st)
			}
		}
		n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: e.clock.Now()})
		if err != nil || n != len(settled) {
			t.Fatalf("Purge() as retention ends = %d, %v; want %d %v", n, err, len(settled), settled)
		}
		for st, rec := range made {
			got, err := e.st.Get(e.ctx, rec.ID)
			if st.Settled() {
				if !errors.Is(err, ledger.ErrNotFound) {
					t.Errorf("Get(%s record) after purge = %v; want ErrNotFound", st, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("Get(%s record) after purge = %v; want it kept", st, err)
				continue
			}
			if d := diff(got, rec); d != "" {
				t.Errorf("purge changed a %s record: %s", st, d)
			}
		}
		if d := diff(e.mustGet(fresh.ID), fresh); d != "" {
			t.Errorf("purge changed a record within retention: %s", d)
		}
		// The key is free again: a reuse is a new operation.
		if c, err := e.st.Claim(e.ctx, req("k-SUCCEEDED", "owner-2")); err != nil || !c.Won || c.Record.Attempts != 0 {
			t.Errorf("Claim of a purged key = {Won: %v}, %v; want a new operation", c.Won, err)
		}
	})

	t.Run("Limit", func(t *testing.T) {
		e := newEnv(t, newStore)
		const made, limit = 25, 10
		for i := range made {
			e.reach(fmt.Sprintf("k-%02d", i), ledger.StateSucceeded)
		}
		kept := e.reach("unknown", ledger.StateUnknown)
		now := e.clock.Advance(ledger.DefaultRetention)
		for _, want := range []int{limit, limit, made - 2*limit, 0} {
			if n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: now, Limit: limit}); err != nil || n != want {
				t.Fatalf("Purge(Limit %d) = %d, %v; want %d (at most the limit, the rest at the next call)", limit, n, err, want)
			}
		}
		if d := diff(e.mustGet(kept.ID), kept); d != "" {
			t.Errorf("Purge(Limit) changed an UNKNOWN record: %s", d)
		}
	})

	t.Run("Preview", func(t *testing.T) {
		e := newEnv(t, newStore)
		pp, ok := ledger.Unwrap(e.st).(ledger.PurgePreviewer)
		if !ok {
			t.Skip("the store has no PurgePreview")
		}
		first := e.reach("s-1", ledger.StateSucceeded)
		e.clock.Advance(time.Minute)
		e.reach("s-2", ledger.StateSucceeded)
		e.reach("f-1", ledger.StateFailed)
		e.reach("u-1", ledger.StateUnknown)
		e.clock.Advance(time.Minute)
		last := e.reach("r-1", ledger.StateRejected)
		e.clock.Advance(time.Hour)
		young := e.reach("young", ledger.StateSucceeded) // within retention
		now := e.clock.Advance(ledger.DefaultRetention - time.Hour)
		p := ledger.PurgeRequest{ExpiredBy: now}
		pv, err := pp.PurgePreview(e.ctx, p)
		if err != nil {
			t.Fatalf("PurgePreview() = %v", err)
		}
		want := map[ledger.State]int{ledger.StateSucceeded: 2, ledger.StateFailed: 1, ledger.StateRejected: 1}
		if !maps.Equal(pv.ByState, want) || !pv.Oldest.Equal(first.CreatedAt) || !pv.Newest.Equal(last.CreatedAt) {
			t.Errorf("PurgePreview() = %v, oldest %v, newest %v; want %v, %v, %v", pv.ByState, pv.Oldest, pv.Newest, want, first.CreatedAt, last.CreatedAt)
		}
		if _, err := e.st.Get(e.ctx, first.ID); err != nil {
			t.Errorf("Get(s-1) after PurgePreview = %v; want it kept (a preview deletes nothing)", err)
		}
		if n, err := e.st.Purge(e.ctx, p); err != nil || n != pv.Total() {
			t.Errorf("Purge() after PurgePreview = %d, %v; want the %d previewed", n, err, pv.Total())
		}
		if _, err := e.st.Get(e.ctx, young.ID); err != nil {
			t.Errorf("Get(young) after Purge = %v; want it kept", err)
		}
		if pv, err := pp.PurgePreview(e.ctx, p); err != nil || pv.Total() != 0 || !pv.Oldest.IsZero() {
			t.Errorf("PurgePreview() after Purge = %+v, %v; want nothing", pv, err)
		}
	})

	t.Run("UpdatedBefore", func(t *testing.T) {
		e := newEnv(t, newStore)
		old := e.reach("old", ledger.StateSucceeded)
		unknown := e.reach("unknown", ledger.StateUnknown)
		e.clock.Advance(10 * time.Minute)
		recent := e.reach("recent", ledger.StateFailed)
		cut := e.clock.Now().Add(-5 * time.Minute)
		n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{UpdatedBefore: cut})
		if err != nil || n != 1 {
			t.Fatalf("Purge(UpdatedBefore) = %d, %v; want 1", n, err)
		}
		if _, err := e.st.Get(e.ctx, old.ID); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get(old) after Purge(UpdatedBefore) = %v; want ErrNotFound", err)
		}
		for _, r := range []*ledger.Record{unknown, recent} {
			if d := diff(e.mustGet(r.ID), r); d != "" {
				t.Errorf("Purge(UpdatedBefore) changed %q: %s", r.Key, d)
			}
		}
	})

	t.Run("Tombstone", func(t *testing.T) {
		e := newEnv(t, newStore)
		r := req("k1", "owner-1")
		r.Retention = time.Hour
		r.ReusePolicy = ledger.Verify
		r.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		claimed := e.mustClaim(r)
		e.mustTransition(ledger.Transition{ID: r.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "owner-1", Fence: claimed.Fence,
			Result: json.RawMessage(`{"id":"pay_1"}`), AddAttempts: 1})
		now := e.clock.Advance(time.Hour)
		if n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: now}); err != nil || n != 1 {
			t.Fatalf("Purge() of a Verify record = %d, %v; want 1", n, err)
		}
		got := e.mustGet(r.ID)
		if !got.Tombstone || got.Fingerprint != r.Fingerprint || got.Result != nil || got.Arguments != nil || got.ReusePolicy != ledger.Verify {
			t.Errorf("Verify record after purge = tombstone %v fingerprint %.12s result %s arguments %s policy %q; want a tombstone keeping only identity and fingerprint",
				got.Tombstone, got.Fingerprint, got.Result, got.Arguments, got.ReusePolicy)
		}
		if !got.ExpiresAt.Equal(now.Add(time.Hour)) {
			t.Errorf("tombstone ExpiresAt = %v; want one more retention period, %v", got.ExpiresAt, now.Add(time.Hour))
		}
		if n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: now}); err != nil || n != 0 {
			t.Errorf("second Purge() at the same time = %d, %v; want 0 (the tombstone outlives the result)", n, err)
		}

		// A reuse goes to a person: never won, the caller sees the tombstone.
		c, err := e.st.Claim(e.ctx, req("k1", "owner-2"))
		if err != nil || c.Won || c.Record == nil || !c.Record.Tombstone {
			t.Errorf("Claim of a tombstoned key = {Won: %v}, %v; want a follower seeing the tombstone", c.Won, err)
		}
		other := req("k1", "owner-2")
		other.Fingerprint = fp("other")
		if c, err := e.st.Claim(e.ctx, other); !errors.Is(err, ledger.ErrKeyReused) || c.Won {
			t.Errorf("Claim of a tombstoned key with another fingerprint = {Won: %v}, %v; want ErrKeyReused", c.Won, err)
		}
		e.clock.Advance(2 * time.Hour)
		if c, err := e.st.Claim(e.ctx, req("k1", "owner-2")); err != nil || c.Won {
			t.Errorf("Claim of an expired tombstone = {Won: %v}, %v; want a follower: tombstones are never replaced", c.Won, err)
		}
		if n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: e.clock.Now()}); err != nil || n != 1 {
			t.Fatalf("Purge() of an expired tombstone = %d, %v; want 1", n, err)
		}
		if _, err := e.st.Get(e.ctx, r.ID); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get of a purged tombstone = %v; want ErrNotFound", err)
		}
		if c, err := e.st.Claim(e.ctx, req("k1", "owner-3")); err != nil || !c.Won {
			t.Errorf("Claim after the tombstone is gone = {Won: %v}, %v; want a new operation", c.Won, err)
		}
	})

	t.Run("ExpiredReplaced", func(t *testing.T) {
		cases := []struct {
			name    string
			state   ledger.State
			after   time.Duration
			sameFP  bool
			replace bool
		}{
			{"succeeded, expired, other arguments", ledger.StateSucceeded, time.Hour, false, true},
			{"succeeded, expired, same arguments", ledger.StateSucceeded, time.Hour, true, true},
			{"failed, expired", ledger.StateFailed, 2 * time.Hour, true, true},
			{"denied, expired", ledger.StateDenied, time.Hour, false, true},
			{"retryable, expired, other arguments", ledger.StateRetryable, time.Hour, false, true},
			{"rejected, expired, other arguments", ledger.StateRejected, time.Hour, false, true},
			{"succeeded, a microsecond before expiry", ledger.StateSucceeded, time.Hour - time.Microsecond, true, false},
			{"unknown, expired", ledger.StateUnknown, time.Hour, true, false},
			{"pending approval, expired", ledger.StatePendingApproval, time.Hour, true, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, newStore)
				r := req("k1", "owner-1")
				r.Retention = time.Hour
				r.NeedsApproval = tc.state == ledger.StatePendingApproval || tc.state == ledger.StateDenied
				e.mustClaim(r)
				before := e.reachFrom("k1", tc.state)
				now := e.clock.Advance(tc.after)
				again := req("k1", "owner-2")
				if !tc.sameFP {
					again.Fingerprint = fp("new arguments")
					again.Arguments = json.RawMessage(`{"amount":1}`)
				}
				c, err := e.st.Claim(e.ctx, again)
				if !tc.replace {
					if c.Won || (err != nil && !errors.Is(err, ledger.ErrKeyReused)) {
						t.Fatalf("Claim(%q) = {Won: %v}, %v; want the %s record kept", again.Key, c.Won, err, tc.state)
					}
					if d := diff(e.mustGet(again.ID), before); d != "" {
						t.Errorf("Claim changed a kept record: %s", d)
					}
					return
				}
				if err != nil || !c.Won {
					t.Fatalf("Claim(%q) of an expired %s record = {Won: %v}, %v; want a new operation", again.Key, tc.state, c.Won, err)
				}
				want := &ledger.Record{ID: again.ID, Session: again.Session, Fingerprint: again.Fingerprint, Arguments: again.Arguments,
					State: ledger.StateProcessing, Fence: before.Fence + 1, Owner: "owner-2", LeaseUntil: now.Add(ledger.DefaultLease), ReusePolicy: ledger.Reexecute,
					CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(ledger.DefaultRetention)}
				if d := diff(c.Record, want); d != "" {
					t.Errorf("replacement record: %s", d)
				}
			})
		}
	})
}

// reachFrom drives the already claimed record of key into state.
func (e *env) reachFrom(key string, state ledger.State) *ledger.Record {
	e.t.Helper()
	step := func(from, to ledger.State) *ledger.Record {
		cur := e.mustGet(id(key))
		return e.mustTransition(ledger.Transition{ID: id(key), From: from, To: to, Owner: cur.Owner, Fence: cur.Fence, AddAttempts: 1})
	}
	switch state {
	case ledger.StatePendingApproval, ledger.StateProcessing:
		return e.mustGet(id(key))
	case ledger.StateDenied:
		return step(ledger.StatePendingApproval, ledger.StateDenied)
	}
	return step(ledger.StateProcessing, state)
}

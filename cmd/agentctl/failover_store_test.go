package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
)

// The PostgreSQL store through a failover, one piece at a time: an owner
// holds a claim and a follower in another Store waits for it; the primary
// is SIGKILLed and Patroni promotes the synchronous standby. The owner
// renews its lease on the new primary and settles the record, and the
// follower, whose LISTEN was re-established there, is woken by the
// notification: its poll is set to minutes, so only a notification can
// wake it within the test's bound.
func TestFailoverStoreWaiterAndLease(t *testing.T) {
	h := newHAPair(t, "sync")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	open := func(o *postgres.Options) *postgres.Store {
		st, err := postgres.Open(ctx, h.dsn, o)
		if err != nil {
			t.Fatalf("postgres.Open(the HA pair) = %v", err)
		}
		t.Cleanup(func() { _ = st.Close() }) // the test's checks are done by then
		return st
	}
	owner := open(&postgres.Options{ReconnectFor: time.Minute})
	follower := open(&postgres.Options{ReconnectFor: time.Minute, PollMin: 10 * time.Minute, PollMax: 10 * time.Minute})

	id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: "failover-lease"}
	cl, err := owner.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f", Arguments: json.RawMessage(`{}`), Owner: "owner-1"})
	if err != nil || !cl.Won {
		t.Fatalf("Claim = %+v, %v; want won", cl, err)
	}
	type waited struct {
		rec *ledger.Record
		err error
		at  time.Time
	}
	done := make(chan waited, 1)
	go func() {
		rec, err := follower.Wait(ctx, id)
		done <- waited{rec, err, time.Now()}
	}()
	// The follower marks the record it waits for; the owner notifies only
	// marked records.
	conn, err := pgx.Connect(ctx, h.dsn)
	if err != nil {
		t.Fatal(err)
	}
	for watched := false; !watched; {
		if err := conn.QueryRow(ctx, `SELECT watched FROM records WHERE key = $1`, id.Key).Scan(&watched); err != nil {
			t.Fatalf("reading the watched mark: %v", err)
		}
		select {
		case w := <-done:
			t.Fatalf("Wait returned %+v before the record settled", w)
		case <-ctx.Done():
			t.Fatal("the follower never marked the record")
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = conn.Close(ctx) // it dies with the primary
	lease := ledger.LeaseOf(cl.Record)
	// A durable write: the mark (committed without waiting) is on the
	// standby too once this returns.
	if err := owner.Renew(ctx, lease, time.Minute); err != nil {
		t.Fatalf("Renew before the failover = %v", err)
	}

	killed := time.Now()
	h.run("kill-leader")
	if err := owner.Renew(ctx, lease, 2*time.Minute); err != nil {
		t.Fatalf("Renew across the failover = %v; want the lease renewed on the new primary", err)
	}
	renewed := time.Since(killed)
	rec, err := owner.Get(ctx, id)
	if err != nil || rec.State != ledger.StateProcessing || rec.Fence != cl.Record.Fence || time.Until(rec.LeaseUntil) < time.Minute {
		t.Fatalf("record on the new primary = %+v, %v; want PROCESSING, fence %d, the lease renewed for 2 minutes", rec, err, cl.Record.Fence)
	}
	settled := time.Now()
	if _, err := owner.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: lease.Owner, Fence: lease.Fence, Result: json.RawMessage(`{"content":[]}`)}); err != nil {
		t.Fatalf("settling on the new primary = %v", err)
	}
	select {
	case w := <-done:
		if w.err != nil || w.rec.State != ledger.StateSucceeded {
			t.Fatalf("Wait = %+v, %v; want SUCCEEDED", w.rec, w.err)
		}
		t.Logf("lease renewed on the new primary %v after the kill; the follower woke %v after the settle", renewed.Round(100*time.Millisecond), w.at.Sub(settled).Round(time.Millisecond))
	case <-time.After(time.Minute):
		t.Fatal("the follower was not woken within a minute of the settle: its LISTEN was not re-established on the new primary")
	}
}

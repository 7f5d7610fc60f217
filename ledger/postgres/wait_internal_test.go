package postgres

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// These tests stand for followers in other processes with a second Store on
// the same schema: it shares no memory with the writer, only the database.

func openT(t *testing.T, url string, opts *Options) *Store {
	t.Helper()
	st, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// awaitLive waits until st's listener has established its LISTEN more than
// after times.
func awaitLive(ctx context.Context, t *testing.T, st *Store, after int) {
	t.Helper()
	st.lis.start()
	for {
		live, gen, _, changed := st.lis.state()
		if live && gen > after {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("listener never established LISTEN (live %v, %d times): %v", live, gen, ctx.Err())
		}
	}
}

// waitFrom starts follower.Wait(id) and returns once Wait has read the
// record once (and seen it PROCESSING), so that what ends the Wait must be
// a wake-up, not the first read.
func waitFrom(ctx context.Context, t *testing.T, follower *Store, id ledger.ID) <-chan *ledger.Record {
	t.Helper()
	firstRead := make(chan ledger.State, 1)
	hook := func(r *ledger.Record) {
		select {
		case firstRead <- r.State:
		default:
		}
	}
	testHookWaitRead.Store(&hook)
	t.Cleanup(func() { testHookWaitRead.Store(nil) })
	out := make(chan *ledger.Record, 1)
	go func() {
		rec, err := follower.Wait(ctx, id)
		if err != nil {
			t.Errorf("Wait(%q) = %v; want the settled record", id.Key, err)
		}
		out <- rec
	}()
	select {
	case st := <-firstRead:
		if st != ledger.StateProcessing {
			t.Fatalf("Wait's first read saw %s; want PROCESSING", st)
		}
	case <-ctx.Done():
		t.Fatal("Wait never read the record")
	}
	return out
}

func complete(ctx context.Context, t *testing.T, st *Store, id ledger.ID) {
	t.Helper()
	cur, err := st.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get(%q) = %v", id.Key, err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "writer", Fence: cur.Fence, Result: json.RawMessage(`{"ok":true}`)}); err != nil {
		t.Fatalf("Transition(%q) = %v", id.Key, err)
	}
}

func claim(ctx context.Context, t *testing.T, st *Store, key string) ledger.ID {
	t.Helper()
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: key}
	if c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "writer"}); err != nil || !c.Won {
		t.Fatalf("Claim(%q) = {Won: %v}, %v; want a won claim", key, c.Won, err)
	}
	return id
}

func expectSettled(ctx context.Context, t *testing.T, got <-chan *ledger.Record, how string) {
	t.Helper()
	select {
	case rec := <-got:
		if rec == nil || rec.State != ledger.StateSucceeded {
			t.Fatalf("Wait %s returned %v; want SUCCEEDED", how, rec)
		}
	case <-ctx.Done():
		t.Fatalf("Wait was not woken %s", how)
	}
}

// TestNotifyWakesOtherStore: the follower polls once an hour, so only the
// writer's notification can end its Wait in time. After the listener's
// server session is killed, it reconnects and notifications flow again.
func TestNotifyWakesOtherStore(t *testing.T) {
	url := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	writer := openT(t, url, nil)
	follower := openT(t, url, &Options{PollMin: time.Hour, PollMax: time.Hour})
	awaitLive(ctx, t, follower, 0)

	id := claim(ctx, t, writer, "k1")
	got := waitFrom(ctx, t, follower, id)
	complete(ctx, t, writer, id)
	expectSettled(ctx, t, got, "by a notification")

	// Kill the listener's session as a failover or an idle-session killer
	// would; the follower must listen again by itself.
	_, gen, pid, _ := follower.lis.state()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var ok bool
	if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
	awaitLive(ctx, t, follower, gen)

	id = claim(ctx, t, writer, "k2")
	got = waitFrom(ctx, t, follower, id)
	complete(ctx, t, writer, id)
	expectSettled(ctx, t, got, "by a notification after the listener reconnected")
}

// TestPollFallback: a writer that sends no notification (here, plain SQL)
// is still seen, by the bounded poll.
func TestPollFallback(t *testing.T) {
	url := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	writer := openT(t, url, nil)
	follower := openT(t, url, &Options{PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond})
	awaitLive(ctx, t, follower, 0)

	id := claim(ctx, t, writer, "k1")
	got := waitFrom(ctx, t, follower, id)
	if _, err := writer.pool.Exec(ctx, `UPDATE records SET state = 'SUCCEEDED' WHERE key = $1`, id.Key); err != nil {
		t.Fatal(err)
	}
	expectSettled(ctx, t, got, "by polling")
}

// The records of one key in two layers are woken apart: their
// notification payloads differ, and each carries every part of the ID.
func TestNotifyPayloadPerLayer(t *testing.T) {
	base := ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}
	seen := map[string]ledger.ID{}
	for _, layer := range []string{"", ledger.LayerClient, ledger.LayerProxy, ledger.LayerServer} {
		id := base
		id.Layer = layer
		p := notifyPayload(id)
		if other, ok := seen[p]; ok {
			t.Errorf("notifyPayload(%+v) = notifyPayload(%+v) = %s; want one payload per layer", id, other, p)
		}
		seen[p] = id
	}
	// The separator keeps the layer and the tool apart.
	if notifyPayload(ledger.ID{Tenant: "t", Layer: "client", Tool: "pay", Key: "k"}) ==
		notifyPayload(ledger.ID{Tenant: "t", Layer: "", Tool: "clientpay", Key: "k"}) {
		t.Errorf("a layer and a tool run together give one payload")
	}
}

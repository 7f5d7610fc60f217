package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// writeBehindStore is a durable (FULL) store that writes outcomes behind.
func writeBehindStore(t *testing.T, window time.Duration) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(context.Background(), path, &sqlite.Options{Durability: ledger.WriteBehind, WriteBehindWindow: window})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return st, path
}

func complete(t *testing.T, st *sqlite.Store, c ledger.Claim) *ledger.Record {
	t.Helper()
	r, err := st.Transition(context.Background(), ledger.Transition{ID: c.Record.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: c.Record.Owner, Fence: c.Record.Fence, Result: smallResult, AddAttempts: 1})
	if err != nil {
		t.Fatalf("Transition(%q) = %v", c.Record.Key, err)
	}
	return r
}

// Under write-behind a claim is durable: it fsyncs, and with it every
// outcome written behind before it. An outcome is committed without
// fsync, and is readable by another process at once.
func TestWriteBehind(t *testing.T) {
	ctx := context.Background()
	st, path := writeBehindStore(t, time.Hour) // no flush during the test
	if sqlite.Unsynced(st) {
		t.Fatal("Unsynced after Open = true; want false")
	}
	c, err := st.Claim(ctx, claimReq("a", "me"))
	if err != nil || !c.Won {
		t.Fatalf("Claim(a) = {Won: %v}, %v", c.Won, err)
	}
	if sqlite.Unsynced(st) {
		t.Fatal("Unsynced after a claim = true; want false: the claim must be on disk")
	}
	complete(t, st, c)
	if !sqlite.Unsynced(st) {
		t.Fatal("Unsynced after the outcome = false; want true: it was to be written behind")
	}
	// Another process reads the outcome before anything fsynced it.
	out := startChild(t, ctx, "get", path, "a").expect(t, "state ")
	if want := string(ledger.StateSucceeded) + " " + string(smallResult); out != want {
		t.Fatalf("other process read %q; want %q", out, want)
	}
	if !sqlite.Unsynced(st) {
		t.Fatal("Unsynced after the read = false; want true")
	}
	// The next claim is durable and takes the outcome with it.
	c2, err := st.Claim(ctx, claimReq("b", "me"))
	if err != nil || !c2.Won {
		t.Fatalf("Claim(b) = {Won: %v}, %v", c2.Won, err)
	}
	if sqlite.Unsynced(st) {
		t.Fatal("Unsynced after the next claim = true; want false")
	}
}

// A quiet store fsyncs outcomes written behind within the window.
func TestWriteBehindWindow(t *testing.T) {
	ctx := context.Background()
	st, _ := writeBehindStore(t, 5*time.Millisecond)
	c, err := st.Claim(ctx, claimReq("a", "me"))
	if err != nil || !c.Won {
		t.Fatalf("Claim(a) = {Won: %v}, %v", c.Won, err)
	}
	before := sqlite.Commits(st)
	complete(t, st, c)
	deadline := time.Now().Add(10 * time.Second)
	for sqlite.Unsynced(st) {
		if time.Now().After(deadline) {
			t.Fatal("Unsynced still true 10s after a 5ms window")
		}
		time.Sleep(time.Millisecond) // waiting on a timer in the store
	}
	if got := sqlite.Commits(st) - before; got != 2 {
		t.Fatalf("commits since the claim = %d; want 2 (the outcome, then the flush)", got)
	}
}

// Closing a store flushes outcomes written behind; the durable default
// writes none behind.
func TestWriteBehindCloseAndDefault(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Durability: ledger.WriteBehind, WriteBehindWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, claimReq("a", "me"))
	if err != nil {
		t.Fatal(err)
	}
	complete(t, st, c)
	before := sqlite.Commits(st)
	if err := st.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if got := sqlite.Commits(st) - before; got != 1 {
		t.Fatalf("commits at Close = %d; want 1 (the flush)", got)
	}

	d := openStore(t, nil)
	c, err = d.Claim(ctx, claimReq("a", "me"))
	if err != nil {
		t.Fatal(err)
	}
	complete(t, d, c)
	if sqlite.Unsynced(d) {
		t.Fatal("Unsynced on a durable store = true; want false")
	}
	// A caller's context asks for write-behind on a durable store.
	c, err = d.Claim(ctx, claimReq("b", "me"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Transition(ledger.WithDurability(ctx, ledger.WriteBehind), ledger.Transition{ID: c.Record.ID, From: ledger.StateProcessing,
		To: ledger.StateSucceeded, Owner: "me", Fence: c.Record.Fence, Result: smallResult}); err != nil {
		t.Fatal(err)
	}
	if !sqlite.Unsynced(d) {
		t.Fatal("Unsynced after an outcome under WithDurability(WriteBehind) = false; want true")
	}
}

package outbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/outbox"
)

const childDirEnv = "OUTBOX_TEST_CHILD_DIR"

// TestChildDispatcher is the dispatcher process of
// TestDispatcherKilledMidDelivery; it only runs when re-executed by it. It
// delivers events and kills itself with SIGKILL right after the downstream
// committed the event with payload {"n":2}, before the outbox could mark it
// delivered.
func TestChildDispatcher(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestDispatcherKilledMidDelivery")
	}
	db := openDB(t, filepath.Join(dir, "app.db"))
	c := newConsumer(t, filepath.Join(dir, "consumer.db"))
	d := &outbox.Dispatcher{
		DB: db, Owner: "child", Lease: 500 * time.Millisecond, Poll: 5 * time.Millisecond, Logger: quiet(),
		Deliver: func(ctx context.Context, e outbox.Event) error {
			if err := c.receive(ctx, e); err != nil {
				return err
			}
			if string(e.Payload) == `{"n":2}` {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal arrives before anything else runs
			}
			return nil
		},
	}
	d.Run(context.Background())
}

func TestDispatcherKilledMidDelivery(t *testing.T) {
	dir := t.TempDir()
	db := producer(t, dir)
	c := newConsumer(t, filepath.Join(dir, "consumer.db"))
	const events = 10
	ids := enqueue(t, db, events)

	cmd := exec.Command(os.Args[0], "-test.run=^TestChildDispatcher$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child dispatcher ended with %v; want death by SIGKILL\n%s", err, out)
	}
	if got := count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE delivered_at IS NOT NULL`); got != 2 {
		t.Fatalf("%d events marked delivered by the killed dispatcher; want 2 (n=0, n=1)", got)
	}

	// The restarted dispatcher waits out the dead one's leases, then
	// delivers the rest, the half-delivered event included.
	d := &outbox.Dispatcher{DB: db, Owner: "restarted", Poll: 10 * time.Millisecond, Deliver: c.receive, Logger: quiet()}
	runUntil(t, d, func() bool {
		return count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE delivered_at IS NULL`) == 0
	})
	for i, id := range ids {
		seen := count(t, c.db, `SELECT coalesce(sum(n), 0) FROM seen WHERE event_id = $1`, id)
		applied := count(t, c.db, `SELECT coalesce(sum(n), 0) FROM applied WHERE event_id = $1`, id)
		wantSeen := 1
		if i == 2 {
			wantSeen = 2 // delivered, then the dispatcher died before marking it
		}
		if seen != wantSeen || applied != 1 {
			t.Errorf("event n=%d: seen %d times, applied %d times; want seen %d, applied exactly once", i, seen, applied, wantSeen)
		}
	}
	if got := count(t, c.db, `SELECT count(*) FROM mcpledger_inbox`); got != events {
		t.Errorf("inbox rows = %d; want %d", got, events)
	}
}

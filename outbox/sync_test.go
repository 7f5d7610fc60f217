package outbox_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/outbox"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func runtimeGosched() { runtime.Gosched() }

// waitFor polls cond until it holds or d passes. Used only for what the
// dispatcher reaches by its own polling.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runUntil runs d until cond holds, then stops it.
func runUntil(t testing.TB, d *outbox.Dispatcher, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitFor(t, "the dispatcher", 30*time.Second, cond)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run = %v; want context.Canceled", err)
	}
}

// waitDue waits until some event's backoff has passed.
func waitDue(t testing.TB, db *sql.DB) {
	t.Helper()
	waitFor(t, "an event to come due", 10*time.Second, func() bool {
		return count(t, db, `SELECT count(*) FROM mcpledger_outbox WHERE delivered_at IS NULL AND dead_at IS NULL AND available_at <= $1`,
			time.Now().UnixNano()) > 0
	})
}

package client_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
)

// syncBuffer is a log sink safe for the renewal timer's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A call that outlives its lease keeps the lease renewed, so no follower
// can take it for a dead caller, and renewal stops with the call.
func TestLeaseRenewedWhileCallRuns(t *testing.T) {
	var logs syncBuffer
	lease := 150 * time.Millisecond
	f := newFixture(t, nil, &client.Options{
		Lease:  lease,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	f.srv.Script(mcptest.StallAfterExecute(8 * lease))
	ctx := client.WithKey(context.Background(), "long")
	done := make(chan error, 1)
	go func() {
		_, err := f.c.Call(ctx, write("a", 1))
		done <- err
	}()
	<-f.srv.Stalled() // executed; the answer comes after 8 leases
	if r := record(t, f.store, "write", "long"); r.State != ledger.StateProcessing {
		t.Fatalf("record during the call = %s; want PROCESSING", r.State)
	}
	// Another process's caller of the same key waits on the record and
	// expires it (UNKNOWN) as soon as its lease ends without renewal.
	follower := client.New(f.srv.ConnectInMemory(context.Background(), t, nil), f.store,
		&client.Options{Policy: allow(), Owner: "other-process", InProgressWait: time.Minute})
	o, err := follower.Call(ctx, write("a", 1))
	if err != nil {
		t.Fatalf("follower Call = %v; want the leader's result (its lease renewed)", err)
	}
	if !o.Replayed {
		t.Fatalf("follower Call ran the tool; want a replay")
	}
	if err := <-done; err != nil {
		t.Fatalf("Call = %v", err)
	}
	r := record(t, f.store, "write", "long")
	if r.State != ledger.StateSucceeded || r.ErrorKind != "" {
		t.Fatalf("record = %s %q; want SUCCEEDED (the lease never ran out)", r.State, r.ErrorKind)
	}
	if got := f.srv.Executions("long"); got != 1 {
		t.Fatalf("Executions = %d; want 1", got)
	}
	if strings.Contains(logs.String(), "lease renewal failed") {
		t.Fatalf("a renewal ran after the call ended:\n%s", logs.String())
	}
}

package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func decideStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return st
}

// unknownRecord claims key and ends its run ambiguously: UNKNOWN.
func unknownRecord(t *testing.T, lc *ledger.Lifecycle, key string) *ledger.Record {
	t.Helper()
	ctx := context.Background()
	rec, ran, err := lc.Do(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: "t", Tool: "pay", Key: key}, Fingerprint: "fp"},
		func(context.Context, ledger.Lease) ledger.Report {
			return ledger.Report{On: ledger.OnAmbiguous, ErrorKind: "ambiguous"}
		})
	if err != nil || !ran || rec.State != ledger.StateUnknown {
		t.Fatalf("Do = %v, ran %v, %v; want an UNKNOWN record it ran", rec, ran, err)
	}
	return rec
}

// Resend takes an UNKNOWN record over once, with a higher fence, however
// many callers race for it; Reconcile settles one that is still UNKNOWN and
// refuses one that is not.
func TestResendAndReconcile(t *testing.T) {
	ctx := context.Background()
	st := decideStore(t)
	lc := &ledger.Lifecycle{Store: st, Owner: "a"}
	rec := unknownRecord(t, lc, "k-1")

	var won atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			again, err := lc.Resend(ctx, rec)
			switch {
			case err == nil:
				won.Add(1)
				if again.State != ledger.StateProcessing || again.Fence <= rec.Fence {
					t.Errorf("Resend = %s fence %d; want PROCESSING above fence %d", again.State, again.Fence, rec.Fence)
				}
			case !errors.Is(err, ledger.ErrStateChanged) && !errors.Is(err, ledger.ErrLeaseLost):
				t.Errorf("losing Resend = %v; want ErrStateChanged", err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d Resends won; want 1", won.Load())
	}

	rec2 := unknownRecord(t, lc, "k-2")
	res := json.RawMessage(`{"content":[{"type":"text","text":"found it"}]}`)
	got, err := ledger.Reconcile(ctx, st, rec2.ID, ledger.Reconciliation{As: ledger.StateSucceeded, Result: res, Message: "by ops"})
	if err != nil || got.State != ledger.StateSucceeded || got.ErrorKind != ledger.KindReconciled {
		t.Fatalf("Reconcile = %v, %v; want SUCCEEDED, kind %s", got, err, ledger.KindReconciled)
	}
	if _, err := ledger.Reconcile(ctx, st, rec2.ID, ledger.Reconciliation{As: ledger.StateFailed}); !errors.Is(err, ledger.ErrStateChanged) {
		t.Errorf("Reconcile of a SUCCEEDED record = %v; want ErrStateChanged", err)
	}
	if _, err := ledger.Reconcile(ctx, st, rec2.ID, ledger.Reconciliation{As: ledger.StateDenied}); !errors.Is(err, ledger.ErrIllegalTransition) {
		t.Errorf("Reconcile as DENIED = %v; want ErrIllegalTransition", err)
	}
	if got.Reconciled == nil || got.Reconciled.Method != ledger.MethodPerson || got.Reconciled.Verdict != ledger.VerdictFound {
		t.Errorf("Reconcile as SUCCEEDED: Reconciled = %+v; want found by a person", got.Reconciled)
	}

	// A person may say it never ran: the same key runs on its next call.
	rec3 := unknownRecord(t, lc, "k-3")
	got, err = ledger.Reconcile(ctx, st, rec3.ID, ledger.Reconciliation{As: ledger.StateRetryable, By: "alice", Note: "no such order"})
	if err != nil || got.State != ledger.StateRetryable || got.Reconciled == nil || got.Reconciled.By != "alice" || got.Reconciled.Evidence != "no such order" {
		t.Fatalf("Reconcile as RETRYABLE = %+v, %v; want RETRYABLE, reconciled by alice with the note", got, err)
	}
}

// A queued call a person approved is consumed once: the approval record
// (Decide, OnApproveLater) hands it to a queue's name, and of many
// Consumes exactly one takes it to PROCESSING.
func TestDecideThenConsumeOnce(t *testing.T) {
	ctx := context.Background()
	st := decideStore(t)
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: "q-1"}
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", NeedsApproval: true, Owner: "queue;v1;bob", Lease: time.Hour})
	if err != nil || !cl.Won {
		t.Fatalf("Claim = %v, %v", cl, err)
	}
	if _, err := ledger.Decide(ctx, st, cl.Record, ledger.Decision{On: ledger.OnSucceeded}); !errors.Is(err, ledger.ErrIllegalTransition) {
		t.Errorf("Decide(OnSucceeded) = %v; want ErrIllegalTransition", err)
	}
	ap := &ledger.Approval{Decision: ledger.DecisionApproved, By: "alice", At: time.Now(), Fingerprint: "fp"}
	approved, err := ledger.Decide(ctx, st, cl.Record, ledger.Decision{On: ledger.OnApproveLater, Approval: ap, Owner: "approved;v1;bob", Lease: time.Hour})
	if err != nil || approved.State != ledger.StatePendingApproval || approved.Owner != "approved;v1;bob" {
		t.Fatalf("Decide(approve) = %v, %v; want PENDING_APPROVAL under the approved queue name", approved, err)
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			lc := &ledger.Lifecycle{Store: st, Owner: "caller-" + string(rune('a'+i))}
			after, err := lc.Consume(ctx, approved)
			if err == nil {
				won.Add(1)
				if after.State != ledger.StateProcessing || after.Fence <= approved.Fence {
					t.Errorf("Consume = %s fence %d; want PROCESSING above %d", after.State, after.Fence, approved.Fence)
				}
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d Consumes won; want 1", won.Load())
	}
}

package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/metrictest"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/telemetry"
)

// resolvedBy sums mcpledger.unknown.resolved{method} as reader has it.
func resolvedBy(t *testing.T, reader *metrictest.Recorder, method ledger.Method) int64 {
	t.Helper()
	return reader.Sum(telemetry.MetricUnknownResolved, telemetry.AttrResolutionMethod.String(string(method)))
}

// A probe's resolution is counted as method "probe", inline (a call meets
// the UNKNOWN record) and by Reconcile (a background sweep); an attempt
// that finds nothing conclusive is not.
func TestProbeResolutionsAreCounted(t *testing.T) {
	ctx := context.Background()
	reader := &metrictest.Recorder{}
	mp := reader
	pc := newProbeClient(t, probePolicy, func(o *client.Options) { o.MeterProvider = mp })
	strandUnknown(t, pc.store, "m-inline")
	pc.shop.pretendPaid("m-inline", "pay_lost")
	if _, err := pc.pay("m-inline"); err != nil {
		t.Fatalf("call = %v; want the found payment", err)
	}
	if got := resolvedBy(t, reader, ledger.MethodProbe); got != 1 {
		t.Fatalf("resolved{probe} after the inline probe = %d; want 1", got)
	}
	absent := strandUnknown(t, pc.store, "m-bg")
	after, err := pc.c.Reconcile(ctx, absent, nil)
	if err != nil || after.State != ledger.StateUnknown {
		t.Fatalf("Reconcile within the quiet period = %v, %v; want UNKNOWN", after, err)
	}
	if got := resolvedBy(t, reader, ledger.MethodProbe); got != 1 {
		t.Fatalf("resolved{probe} after an inconclusive probe = %d; want 1", got)
	}
	pc.clock.Store(int64(time.Minute))
	if after, err = pc.c.Reconcile(ctx, after, nil); err != nil || after.State != ledger.StateRetryable {
		t.Fatalf("Reconcile after the quiet period = %v, %v; want RETRYABLE", after, err)
	}
	if got := resolvedBy(t, reader, ledger.MethodProbe); got != 2 {
		t.Errorf("resolved{probe} after the background probe = %d; want 2", got)
	}
}

// A re-send of an UNKNOWN call to a key-aware server that answers is
// counted as method "resend".
func TestResendResolutionIsCounted(t *testing.T) {
	reader := &metrictest.Recorder{}
	mp := reader
	f := newFixture(t, &mcptest.Options{Idempotent: true}, &client.Options{MeterProvider: mp})
	id := strand(t, f.store, "m-resend", time.Minute)
	if _, err := f.store.Transition(context.Background(), ledger.Transition{
		ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "crashed-process", Fence: strandedFence, ErrorKind: "ambiguous",
	}); err != nil {
		t.Fatalf("Transition to UNKNOWN = %v", err)
	}
	if _, err := f.c.Call(client.WithKey(context.Background(), "m-resend"), write("a", 1)); err != nil {
		t.Fatalf("Call = %v; want the UNKNOWN call reconciled by a re-send", err)
	}
	if got := resolvedBy(t, reader, ledger.MethodResend); got != 1 {
		t.Errorf("resolved{resend} = %d; want 1", got)
	}
	if got := resolvedBy(t, reader, ledger.MethodProbe); got != 0 {
		t.Errorf("resolved{probe} = %d; want 0", got)
	}
	wantResendFinding(t, f, id)
}

// wantResendFinding checks that the record of id says a re-send settled
// its UNKNOWN: found, by method resend.
func wantResendFinding(t *testing.T, f *fixture, id ledger.ID) {
	t.Helper()
	rec, err := f.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Reconciled; r == nil || r.Verdict != ledger.VerdictFound || r.Method != ledger.MethodResend || r.Since.IsZero() {
		t.Errorf("the re-sent record's resolution = %+v; want found by %s, with when it became UNKNOWN", r, ledger.MethodResend)
	}
}

// Resend settles an UNKNOWN record without a call, as a background sweep
// does, at a key-aware server: its first answer, or one execution; a
// server that does not honour keys gets nothing (ErrNoResend).
func TestResendWithoutACall(t *testing.T) {
	ctx := context.Background()
	unknown := func(f *fixture, key string) *ledger.Record {
		t.Helper()
		doc := []byte(`{"id":"a","amount":1}`)
		fp, err := args.Fingerprint(doc)
		if err != nil {
			t.Fatal(err)
		}
		id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: key}
		cl, err := f.store.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "crashed-process", Lease: time.Minute})
		if err != nil {
			t.Fatalf("Claim = %v", err)
		}
		rec, err := f.store.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown,
			Owner: "crashed-process", Fence: cl.Record.Fence, ErrorKind: "ambiguous"})
		if err != nil {
			t.Fatalf("Transition to UNKNOWN = %v", err)
		}
		return rec
	}
	f := newFixture(t, &mcptest.Options{Idempotent: true}, nil)
	rec := unknown(f, "bg-resend")
	after, err := f.c.Resend(ctx, rec)
	if err != nil || after.State != ledger.StateSucceeded {
		t.Fatalf("Resend = %v, %v; want SUCCEEDED", after, err)
	}
	if got := f.srv.Executions("bg-resend"); got != 1 {
		t.Errorf("Executions = %d; want 1", got)
	}
	wantResendFinding(t, f, rec.ID)
	plain := newFixture(t, nil, nil)
	rec = unknown(plain, "bg-plain")
	if _, err := plain.c.Resend(ctx, rec); !errors.Is(err, client.ErrNoResend) {
		t.Errorf("Resend to a server that ignores keys = %v; want ErrNoResend", err)
	}
	if got := plain.srv.TotalExecutions(); got != 0 {
		t.Errorf("TotalExecutions at the server that ignores keys = %d; want 0", got)
	}
}

package telemetry_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/telemetry"
)

// unknownRecord leaves an UNKNOWN record of key in layer of a real SQLite
// ledger on clock, as a lost connection would, and returns it as read back.
func unknownRecord(t *testing.T, st ledger.Store, layer, key string) *ledger.Record {
	t.Helper()
	ctx := context.Background()
	id := ledger.ID{Tenant: tenant, Layer: layer, Tool: "pay", Key: key}
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f-" + key, Owner: "gone"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	rec, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "gone", Fence: cl.Record.Fence, ErrorKind: "ambiguous", AddAttempts: 1})
	if err != nil {
		t.Fatalf("Transition to UNKNOWN = %v", err)
	}
	return rec
}

// settle resolves rec as found, by method, at the clock's time, through
// ledger.Resolve.
func settle(t *testing.T, st ledger.Store, rec *ledger.Record, method ledger.Method) *ledger.Record {
	t.Helper()
	after, err := ledger.Resolve(context.Background(), st, rec, ledger.Finding{Verdict: ledger.VerdictFound, Result: json.RawMessage(`{"content":[]}`), Method: method, By: "test", Evidence: "seen"})
	if err != nil {
		t.Fatalf("Resolve = %v", err)
	}
	return after
}

func TestResolved(t *testing.T) {
	clock := ledgertest.NewClock(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	st := openStore(t, &sqlite.Options{Now: clock.Now})
	reader := sdkmetric.NewManualReader()
	r := &rig{t: t, reader: reader}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx := context.Background()

	// The console's callback: a record of the proxy, resolved 90 s after
	// it became UNKNOWN, a probe having found nothing 60 s in: the time
	// runs from the write that made it UNKNOWN, not from the attempt.
	res := telemetry.NewResolutions(mp)
	before := unknownRecord(t, st, ledger.LayerProxy, "k-callback")
	clock.Advance(60 * time.Second)
	before, err := ledger.Resolve(ctx, st, before, ledger.Finding{Verdict: ledger.VerdictUnknown, Method: ledger.MethodProbe, Evidence: "no row yet"})
	if err != nil || before.State != ledger.StateUnknown {
		t.Fatalf("Resolve(unknown) = %v, %v; want it UNKNOWN still", before, err)
	}
	res.Resolved(ctx, before, before, ledger.MethodProbe) // an attempt: not counted
	clock.Advance(30 * time.Second)
	res.Resolved(ctx, before, settle(t, st, before, ledger.MethodCallback), ledger.MethodCallback)

	// A server guard's reconciler, through the server's Telemetry, 250 ms
	// after; and a record without a layer takes the Telemetry's side.
	tel := telemetry.New(ledger.SideServer, &telemetry.Options{MeterProvider: mp})
	before = unknownRecord(t, st, ledger.LayerServer, "k-reconciler")
	clock.Advance(250 * time.Millisecond)
	tel.Resolved(ctx, before, settle(t, st, before, ledger.MethodReconciler), ledger.MethodReconciler)
	before = unknownRecord(t, st, "", "k-nolayer")
	clock.Advance(time.Second)
	tel.Resolved(ctx, before, settle(t, st, before, ledger.MethodReconciler), ledger.MethodReconciler)

	// A finding that left the record UNKNOWN is an attempt, not a
	// resolution; and a nil *Resolutions or *Telemetry reports nothing.
	still := unknownRecord(t, st, ledger.LayerClient, "k-still")
	res.Resolved(ctx, still, still, ledger.MethodProbe)
	var nilRes *telemetry.Resolutions
	nilRes.Resolved(ctx, before, before, ledger.MethodPerson)
	var nilTel *telemetry.Telemetry
	nilTel.Resolved(ctx, before, before, ledger.MethodPerson)

	for _, c := range []struct {
		name  string
		match []string
		want  float64
	}{
		{"all", nil, 3},
		{"callback", []string{"mcpledger.resolution.method=callback", "gen_ai.tool.name=pay", "mcpledger.state=SUCCEEDED", "mcpledger.side=client"}, 1},
		{"reconciler on the server", []string{"mcpledger.resolution.method=reconciler", "mcpledger.side=server"}, 2},
		{"probe", []string{"mcpledger.resolution.method=probe"}, 0},
	} {
		if got := r.total(telemetry.MetricUnknownResolved, c.match...); got != c.want {
			t.Errorf("%s: %s %v = %v; want %v", c.name, telemetry.MetricUnknownResolved, c.match, got, c.want)
		}
	}
	sums := map[string]float64{}
	for _, p := range r.collect(telemetry.MetricResolutionDuration) {
		m, _ := p.attrs.Value(telemetry.AttrResolutionMethod)
		sums[m.AsString()] += p.value
		if p.count == 0 {
			t.Errorf("%s %v has no observation", telemetry.MetricResolutionDuration, p.attrs)
		}
	}
	if got, want := sums["callback"], 90.0; got != want {
		t.Errorf("%s{callback} sum = %v s; want %v (the time it stood UNKNOWN)", telemetry.MetricResolutionDuration, got, want)
	}
	if got, want := sums["reconciler"], 1.25; got != want {
		t.Errorf("%s{reconciler} sum = %v s; want %v", telemetry.MetricResolutionDuration, got, want)
	}
}

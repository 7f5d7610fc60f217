package telemetry_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/telemetry"
)

// TestOpenGauges reads the gauges of open records from a real SQLite
// ledger: the UNKNOWN count and the oldest one's age, the approval backlog
// and its oldest age, each 0 once nothing is open.
func TestOpenGauges(t *testing.T) {
	clock := ledgertest.NewClock(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	st := openStore(t, &sqlite.Options{Now: clock.Now})
	reader := sdkmetric.NewManualReader()
	r := &rig{t: t, reader: reader}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel := telemetry.New(ledger.SideClient, &telemetry.Options{MeterProvider: mp, Unknown: st, Now: clock.Now})
	t.Cleanup(func() {
		if err := tel.Close(context.Background()); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	ctx := context.Background()

	check := func(when string, want map[string]float64) {
		t.Helper()
		for name, w := range want {
			if got := r.total(name, "mcpledger.side=client"); got != w {
				t.Errorf("%s: %s = %v; want %v", when, name, got, w)
			}
		}
	}
	check("empty ledger", map[string]float64{
		telemetry.MetricUnknownOpen: 0, telemetry.MetricUnknownOldestAge: 0,
		telemetry.MetricApprovalOpen: 0, telemetry.MetricApprovalOldestAge: 0,
	})

	first := unknownRecord(t, st, ledger.LayerClient, "k-old")
	clock.Advance(10 * time.Minute)
	unknownRecord(t, st, ledger.LayerServer, "k-new")
	for _, key := range []string{"k-ask-1", "k-ask-2"} {
		id := ledger.ID{Tenant: tenant, Layer: ledger.LayerClient, Tool: "pay", Key: key}
		if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f", Owner: "asker", NeedsApproval: true, Lease: time.Hour}); err != nil {
			t.Fatalf("Claim(%q, NeedsApproval) = %v", key, err)
		}
		clock.Advance(time.Minute)
	}
	// A settled record and one in PROCESSING count in neither.
	if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: tenant, Layer: ledger.LayerClient, Tool: "pay", Key: "k-running"}, Fingerprint: "f", Owner: "runner", Lease: time.Hour}); err != nil {
		t.Fatalf("Claim(k-running) = %v", err)
	}
	check("two UNKNOWN, two waiting for approval", map[string]float64{
		telemetry.MetricUnknownOpen: 2, telemetry.MetricUnknownOldestAge: 12 * 60,
		telemetry.MetricApprovalOpen: 2, telemetry.MetricApprovalOldestAge: 2 * 60,
	})

	settle(t, st, first, ledger.MethodPerson)
	check("the oldest UNKNOWN resolved", map[string]float64{
		telemetry.MetricUnknownOpen: 1, telemetry.MetricUnknownOldestAge: 2 * 60,
	})
}

// TestCounterOf finds the store's counts under the wrappers a program puts
// around it, so the open-record gauges report from wrapped stores too.
func TestCounterOf(t *testing.T) {
	st := openStore(t, nil)
	for _, c := range []struct {
		name  string
		store ledger.Store
	}{
		{"the store", st},
		{"under a codec", codec.Wrap(st, nil)},
		{"under two wrappers", wrapped{codec.Wrap(st, nil)}},
	} {
		if got := telemetry.CounterOf(c.store); got != telemetry.UnknownCounter(st) {
			t.Errorf("%s: CounterOf = %T %v; want the SQLite store", c.name, got, got)
		}
	}
	if got := telemetry.CounterOf(struct{ ledger.Store }{st}); got != nil {
		t.Errorf("CounterOf(a wrapper without Unwrap) = %v; want nil", got)
	}
}

// wrapped is a program's own wrapper of a store, with Unwrap.
type wrapped struct{ ledger.Store }

func (w wrapped) Unwrap() ledger.Store { return w.Store }

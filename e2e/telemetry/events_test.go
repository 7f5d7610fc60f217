package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/telemetry"
)

// TestStatsFromBothLedgers runs calls of every kind, closes the client and
// the Guard (which write their last events), and reads each ledger's
// figures back.
func TestStatsFromBothLedgers(t *testing.T) {
	r := newRig(t, nil)
	mustCall(t, r.client, keyed(), 5)
	mustCall(t, r.client, keyed(), 5)
	callErr(t, r.client, keyed(), 6, ledger.ErrKeyReused)
	otherStore := openStore(t, nil)
	other := r.newClient(otherStore, nil)
	mustCall(t, other, keyed(), 5)
	for _, closer := range []func() error{
		r.client.Close, other.Close, func() error { return r.guard.Close(context.Background()) },
	} {
		if err := closer(); err != nil {
			t.Fatalf("Close = %v", err)
		}
	}
	cases := []struct {
		name  string
		store ledger.EventLog
		q     ledger.StatsQuery
		want  ledger.Stats
	}{
		{"first agent", r.cstore, ledger.StatsQuery{Tenant: tenant}, ledger.Stats{Calls: 3, DuplicateHits: 1, KeyConflicts: 1}},
		{"second agent", otherStore, ledger.StatsQuery{Tenant: tenant}, ledger.Stats{Calls: 1}},
		{"server", r.sstore, ledger.StatsQuery{Tenant: tenant}, ledger.Stats{Calls: 2, DuplicateHits: 1, DownstreamDuplicates: 1}},
		{"server, client side only", r.sstore, ledger.StatsQuery{Tenant: tenant, Side: ledger.SideClient}, ledger.Stats{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.store.Stats(context.Background(), c.q)
			if err != nil {
				t.Fatalf("Stats = %v", err)
			}
			if c.want.DuplicateHits > 0 && (got.ReplayP50 <= 0 || got.ReplayP99 < got.ReplayP50) {
				t.Errorf("replay p50 %v p99 %v; want 0 < p50 <= p99", got.ReplayP50, got.ReplayP99)
			}
			got.ReplayP50, got.ReplayP99 = 0, 0
			if got != c.want {
				t.Errorf("Stats(%+v) =\n%+v; want\n%+v", c.q, got, c.want)
			}
		})
	}
}

// appendLog is a real event log that reports each batch it writes, and
// fails every write while fail is set.
type appendLog struct {
	ledger.EventLog
	batches chan int
	fail    error
}

func (l *appendLog) AppendEvents(ctx context.Context, events []ledger.Event) error {
	if l.fail != nil {
		return l.fail
	}
	err := l.EventLog.AppendEvents(ctx, events)
	if l.batches != nil {
		l.batches <- len(events)
	}
	return err
}

// endCalls observes n finished calls of "pay" through tel.
func endCalls(tel *telemetry.Telemetry, n int, o ledger.Outcome) {
	for range n {
		ctx, c := tel.Start(context.Background(), "pay")
		c.End(ctx, telemetry.Result{Outcome: o, Tenant: tenant})
	}
}

func closeTel(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	if err := tel.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func calls(t *testing.T, el ledger.EventLog) int64 {
	t.Helper()
	st, err := el.Stats(context.Background(), ledger.StatsQuery{Tenant: tenant})
	if err != nil {
		t.Fatalf("Stats = %v", err)
	}
	return st.Calls
}

func dropped(t *testing.T, reader *sdkmetric.ManualReader) float64 {
	t.Helper()
	r := &rig{t: t, reader: reader}
	return r.total(telemetry.MetricEventsDropped)
}

func TestEventWriter(t *testing.T) {
	// An hour between ticks: nothing is written unless a batch fills, or
	// Flush or Close is called.
	const never = time.Hour
	cases := []struct {
		name string
		run  func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options)
	}{
		{"a full batch is written at once", func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options) {
			store.batches = make(chan int, 4)
			opts.BatchSize = 3
			tel := telemetry.New(ledger.SideClient, opts)
			t.Cleanup(func() { closeTel(t, tel) })
			endCalls(tel, 3, ledger.OutcomeSucceeded)
			if n := <-store.batches; n != 3 {
				t.Fatalf("first batch has %d events; want 3", n)
			}
			if n := calls(t, store); n != 3 {
				t.Fatalf("Stats().Calls = %d; want 3", n)
			}
		}},
		{"Flush writes what is queued", func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options) {
			tel := telemetry.New(ledger.SideServer, opts)
			t.Cleanup(func() { closeTel(t, tel) })
			endCalls(tel, 2, ledger.OutcomeReplayed)
			if n := calls(t, store); n != 0 {
				t.Fatalf("before Flush Stats().Calls = %d; want 0 (nothing written yet)", n)
			}
			if err := tel.Flush(context.Background()); err != nil {
				t.Fatalf("Flush = %v", err)
			}
			if n := calls(t, store); n != 2 {
				t.Fatalf("after Flush Stats().Calls = %d; want 2", n)
			}
		}},
		{"Close writes the rest and drops later events", func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options) {
			tel := telemetry.New(ledger.SideClient, opts)
			endCalls(tel, 2, ledger.OutcomeSucceeded)
			if err := tel.Close(context.Background()); err != nil {
				t.Fatalf("Close = %v", err)
			}
			endCalls(tel, 1, ledger.OutcomeSucceeded)
			if err := tel.Close(context.Background()); err != nil {
				t.Fatalf("second Close = %v", err)
			}
			if n := calls(t, store); n != 2 {
				t.Fatalf("Stats().Calls = %d; want 2", n)
			}
			if d := dropped(t, reader); d != 1 {
				t.Fatalf("%s = %v; want 1", telemetry.MetricEventsDropped, d)
			}
		}},
		{"overflow past MaxPending is dropped", func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options) {
			opts.MaxPending = 2
			tel := telemetry.New(ledger.SideClient, opts)
			endCalls(tel, 5, ledger.OutcomeSucceeded)
			if err := tel.Close(context.Background()); err != nil {
				t.Fatalf("Close = %v", err)
			}
			if n, d := calls(t, store), dropped(t, reader); n != 2 || d != 3 {
				t.Fatalf("written %d, dropped %v; want 2 and 3", n, d)
			}
		}},
		{"a failed write is dropped and counted", func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options) {
			store.fail = errors.New("disk full")
			tel := telemetry.New(ledger.SideClient, opts)
			endCalls(tel, 2, ledger.OutcomeSucceeded)
			if err := tel.Close(context.Background()); !errors.Is(err, store.fail) {
				t.Fatalf("Close = %v; want %v", err, store.fail)
			}
			if d := dropped(t, reader); d != 2 {
				t.Fatalf("%s = %v; want 2", telemetry.MetricEventsDropped, d)
			}
		}},
		{"a call without a tenant leaves no event", func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options) {
			tel := telemetry.New(ledger.SideServer, opts)
			ctx, c := tel.Start(context.Background(), "pay")
			c.End(ctx, telemetry.Result{Outcome: ledger.OutcomeInvalid})
			if err := tel.Close(context.Background()); err != nil {
				t.Fatalf("Close = %v", err)
			}
			if n, d := calls(t, store), dropped(t, reader); n != 0 || d != 0 {
				t.Fatalf("written %d, dropped %v; want 0 and 0", n, d)
			}
		}},
		{"old events are deleted", func(t *testing.T, store *appendLog, reader *sdkmetric.ManualReader, opts *telemetry.Options) {
			clock := ledgertest.NewClock(ledgertest.Start)
			old := ledger.Event{Tenant: tenant, Tool: "pay", Side: ledger.SideClient, Outcome: ledger.OutcomeSucceeded,
				At: clock.Now().Add(-48 * time.Hour)}
			if err := store.EventLog.AppendEvents(context.Background(), []ledger.Event{old}); err != nil {
				t.Fatalf("AppendEvents = %v", err)
			}
			opts.Now, opts.EventRetention = clock.Now, 24*time.Hour
			tel := telemetry.New(ledger.SideClient, opts)
			endCalls(tel, 1, ledger.OutcomeSucceeded)
			if err := tel.Close(context.Background()); err != nil {
				t.Fatalf("Close = %v", err)
			}
			if n := calls(t, store); n != 1 {
				t.Fatalf("Stats().Calls = %d; want 1 (the old event deleted, the new one kept)", n)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			store := &appendLog{EventLog: openStore(t, nil)}
			opts := &telemetry.Options{
				MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
				Events:        store,
				FlushEvery:    never,
			}
			c.run(t, store, reader, opts)
		})
	}
}

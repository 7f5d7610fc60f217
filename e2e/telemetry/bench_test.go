package telemetry_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

// BenchmarkCall is what telemetry adds to one call: Start, then End with a
// replay (the outcome that moves the most instruments).
func BenchmarkCall(b *testing.B) {
	cases := []struct {
		name string
		opts func(b *testing.B) *telemetry.Options
	}{
		{"noop providers", func(*testing.B) *telemetry.Options {
			return &telemetry.Options{MeterProvider: noop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}
		}},
		{"sdk metrics and spans", func(*testing.B) *telemetry.Options {
			return &telemetry.Options{
				MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
				TracerProvider: sdktrace.NewTracerProvider(),
			}
		}},
		{"sdk and events to sqlite", func(b *testing.B) *telemetry.Options {
			return &telemetry.Options{
				MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
				TracerProvider: sdktrace.NewTracerProvider(),
				Events:         openStore(b, nil),
			}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tel := telemetry.New(ledger.SideClient, c.opts(b))
			b.Cleanup(func() {
				if err := tel.Close(context.Background()); err != nil {
					b.Errorf("Close = %v", err)
				}
			})
			res := telemetry.Result{Outcome: ledger.OutcomeReplayed, Tenant: tenant, Key: key, State: ledger.StateSucceeded, Duplicate: true}
			b.ReportAllocs()
			for b.Loop() {
				ctx, call := tel.Start(context.Background(), "pay")
				call.End(ctx, res)
			}
		})
	}
}

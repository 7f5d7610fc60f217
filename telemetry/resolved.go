package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpledger/mcpledger/ledger"
)

// This file observes reconciliation (DESIGN.md, "Reconciliation"): how
// many UNKNOWN records were resolved, by which method, and how long each
// stood UNKNOWN. Package ledger imports nothing of ours, so whoever calls
// ledger.Resolve (the caller's inline path, the guard's sweep, the proxy,
// the console, agentctl) reports the resolution here.

// The instruments of reconciliation.
const (
	MetricUnknownResolved    = "mcpledger.unknown.resolved"
	MetricResolutionDuration = "mcpledger.unknown.resolution.duration"
)

// AttrResolutionMethod is how an UNKNOWN record was resolved (a
// ledger.Method: resend, reconciler, probe, callback, person).
const AttrResolutionMethod = attribute.Key("mcpledger.resolution.method")

// resolutionBuckets run from an inline resolution in the same turn (tens
// of milliseconds) to a person who looks a week later.
var resolutionBuckets = []float64{
	0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900,
	3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600,
}

// Resolutions reports resolutions of UNKNOWN records. The zero value
// reports nothing; a nil *Resolutions is safe to call. It is safe for
// concurrent use.
type Resolutions struct {
	resolved metric.Int64Counter
	duration metric.Float64Histogram
}

// NewResolutions returns the resolution instruments of mp
// (otel.GetMeterProvider() when nil), for a program that resolves records
// outside any client or server Telemetry (the console, agentctl). Like
// New, it never fails: an instrument the provider refuses is reported to
// otel.Handle and replaced by a no-op.
func NewResolutions(mp metric.MeterProvider) *Resolutions {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return newResolutions(mp.Meter(ScopeName, metric.WithSchemaURL(SchemaURL)))
}

func newResolutions(m metric.Meter) *Resolutions {
	r := &Resolutions{
		resolved: counter(m, MetricUnknownResolved, "{record}", "UNKNOWN records resolved on evidence, by method."),
	}
	var err error
	r.duration, err = m.Float64Histogram(MetricResolutionDuration, metric.WithUnit("s"),
		metric.WithDescription("Time an UNKNOWN record stood UNKNOWN until it was resolved."),
		metric.WithExplicitBucketBoundaries(resolutionBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	return r
}

// Resolved reports one resolution: before is the UNKNOWN record the
// resolver read, after what ledger.Resolve returned. A finding that left
// the record UNKNOWN (an attempt, not a resolution) is not counted.
func (r *Resolutions) Resolved(ctx context.Context, before, after *ledger.Record, method ledger.Method) {
	r.resolvedAs(ctx, before, after, method, "")
}

func (r *Resolutions) resolvedAs(ctx context.Context, before, after *ledger.Record, method ledger.Method, side ledger.Side) {
	if r == nil || r.resolved == nil || before == nil || after == nil ||
		ledger.RowOf(before.State).Act != ledger.ActReconcile || ledger.RowOf(after.State).Act == ledger.ActReconcile {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, AttrResolutionMethod.String(string(method)), AttrTool.String(after.Tool), AttrState.String(string(after.State)))
	if s := sideOf(after.Layer, side); s != "" {
		attrs = append(attrs, AttrSide.String(string(s)))
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	r.resolved.Add(ctx, 1, set)
	if r.duration != nil {
		r.duration.Record(ctx, resolutionTime(before, after).Seconds(), set)
	}
}

// Resolved reports one resolution made by this side (see
// Resolutions.Resolved).
func (t *Telemetry) Resolved(ctx context.Context, before, after *ledger.Record, method ledger.Method) {
	if t == nil {
		return
	}
	t.resolutions.resolvedAs(ctx, before, after, method, t.side)
}

// sideOf is the side a record of layer belongs to: a server guard's
// records are the server's, a client's and a proxy's (which calls through
// package client) the client's; a record without a layer is def's.
func sideOf(layer string, def ledger.Side) ledger.Side {
	switch layer {
	case ledger.LayerServer:
		return ledger.SideServer
	case ledger.LayerClient, ledger.LayerProxy:
		return ledger.SideClient
	}
	return def
}

// resolutionTime is how long the record stood UNKNOWN: from its last
// update before the resolution, which is the write that made it UNKNOWN
// (an inconclusive finding leaves UpdatedAt as it is), to the
// resolution's write, both by the ledger's clock. A clock that went back
// gives zero, not a negative time.
func resolutionTime(before, after *ledger.Record) time.Duration {
	return max(after.UpdatedAt.Sub(before.UpdatedAt), 0)
}

package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpledger/mcpledger/ledger"
)

// The gauges of what is open now: read from the ledger at each collection,
// so that an alert on them sees records of every process that shares it.
const (
	MetricUnknownOldestAge  = "mcpledger.records.unknown.oldest_age"
	MetricApprovalOpen      = "mcpledger.records.pending_approval.open"
	MetricApprovalOldestAge = "mcpledger.records.pending_approval.oldest_age"
)

// OpenCounter is the optional part of a Store that counts the records in
// one state now (every tenant) and finds when the oldest got there, with a
// query bounded by an index of that state: UNKNOWN (since the write that
// made it UNKNOWN) and PENDING_APPROVAL (since its claim). The SQLite and
// PostgreSQL stores have it.
type OpenCounter interface {
	CountOpen(ctx context.Context, state ledger.State) (n int64, oldest time.Time, err error)
}

// openTimeout bounds the counts of one collection, so a slow store delays
// a metrics collection by at most this much.
const openTimeout = 2 * time.Second

// openGauges are the instruments observeOpen reports.
type openGauges struct {
	unknown, approvals            metric.Int64ObservableGauge
	unknownAge, approvalAge       metric.Float64ObservableGauge
	haveUnknownAge, haveApprovals bool
	unknownCounter                UnknownCounter
	openCounter                   OpenCounter // nil: only the UNKNOWN count
	now                           func() time.Time
	attrs                         metric.MeasurementOption
}

// observeOpen registers the gauges of open records: the UNKNOWN count
// from uc, and, when uc is an OpenCounter, the oldest UNKNOWN record's age
// and the PENDING_APPROVAL count and oldest age. Close unregisters them. A
// count that fails is reported to otel.Handle and leaves its gauges
// without a value for that collection, rather than a wrong zero. An age is
// 0 when nothing is open, so an alert on it resolves.
func observeOpen(m metric.Meter, sideKV attribute.KeyValue, uc UnknownCounter, now func() time.Time) metric.Registration {
	g := &openGauges{unknownCounter: uc, now: now, attrs: metric.WithAttributeSet(attribute.NewSet(sideKV))}
	var err error
	g.unknown, err = m.Int64ObservableGauge(MetricUnknownOpen, metric.WithUnit("{record}"),
		metric.WithDescription("Records in UNKNOWN now, waiting to be reconciled (every tenant of the ledger)."))
	if err != nil {
		otel.Handle(err)
		return nil
	}
	insts := []metric.Observable{g.unknown}
	if oc, ok := uc.(OpenCounter); ok {
		g.openCounter = oc
		g.unknownAge, err = m.Float64ObservableGauge(MetricUnknownOldestAge, metric.WithUnit("s"),
			metric.WithDescription("Age of the oldest record in UNKNOWN now, since the write that made it UNKNOWN (0 when none)."))
		if g.haveUnknownAge = err == nil; err != nil {
			otel.Handle(err)
		} else {
			insts = append(insts, g.unknownAge)
		}
		g.approvals, err = m.Int64ObservableGauge(MetricApprovalOpen, metric.WithUnit("{record}"),
			metric.WithDescription("Records waiting for a person's approval now (every tenant of the ledger)."))
		if err == nil {
			g.approvalAge, err = m.Float64ObservableGauge(MetricApprovalOldestAge, metric.WithUnit("s"),
				metric.WithDescription("Age of the oldest record waiting for approval now, since its claim (0 when none)."))
		}
		if g.haveApprovals = err == nil; err != nil {
			otel.Handle(err)
		} else {
			insts = append(insts, g.approvals, g.approvalAge)
		}
	}
	reg, err := m.RegisterCallback(g.observe, insts...)
	if err != nil {
		otel.Handle(err)
		return nil
	}
	return reg
}

func (g *openGauges) observe(ctx context.Context, obs metric.Observer) error {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if g.openCounter == nil {
		n, err := g.unknownCounter.CountUnknown(ctx)
		if err != nil {
			otel.Handle(fmt.Errorf("telemetry: counting UNKNOWN records for %s: %w", MetricUnknownOpen, err))
			return nil
		}
		obs.ObserveInt64(g.unknown, n, g.attrs)
		return nil
	}
	now := g.now()
	if n, oldest, err := g.openCounter.CountOpen(ctx, ledger.StateUnknown); err != nil {
		otel.Handle(fmt.Errorf("telemetry: counting UNKNOWN records for %s: %w", MetricUnknownOpen, err))
	} else {
		obs.ObserveInt64(g.unknown, n, g.attrs)
		if g.haveUnknownAge {
			obs.ObserveFloat64(g.unknownAge, ageOf(now, oldest), g.attrs)
		}
	}
	if !g.haveApprovals {
		return nil
	}
	if n, oldest, err := g.openCounter.CountOpen(ctx, ledger.StatePendingApproval); err != nil {
		otel.Handle(fmt.Errorf("telemetry: counting PENDING_APPROVAL records for %s: %w", MetricApprovalOpen, err))
	} else {
		obs.ObserveInt64(g.approvals, n, g.attrs)
		obs.ObserveFloat64(g.approvalAge, ageOf(now, oldest), g.attrs)
	}
	return nil
}

// ageOf is how long ago oldest was, in seconds: 0 for none (the zero
// time) and for a clock that went back.
func ageOf(now, oldest time.Time) float64 {
	if oldest.IsZero() {
		return 0
	}
	return max(now.Sub(oldest), 0).Seconds()
}

// CounterOf is the UnknownCounter of store for Options.Unknown: store
// itself when it counts, else the first store under its wrappers that does
// (codec.Wrap's, agentctl's, any with an Unwrap() ledger.Store
// method). Counts carry no payload, so a wrapper that seals payloads has
// nothing to add to them. Nil when no store in the chain counts.
func CounterOf(store ledger.Store) UnknownCounter {
	for store != nil {
		if uc, ok := store.(UnknownCounter); ok {
			return uc
		}
		u, ok := store.(interface{ Unwrap() ledger.Store })
		if !ok {
			return nil
		}
		store = u.Unwrap()
	}
	return nil
}

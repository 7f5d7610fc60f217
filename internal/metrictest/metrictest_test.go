package metrictest_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpledger/mcpledger/internal/metrictest"
)

func TestRecorderSums(t *testing.T) {
	var r metrictest.Recorder
	c, err := r.Meter("test").Int64Counter("calls")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Add(ctx, 2, metric.WithAttributes(attribute.String("outcome", "ok"), attribute.String("tool", "pay")))
	c.Add(ctx, 3, metric.WithAttributes(attribute.String("outcome", "error")))
	if got := r.Sum("calls"); got != 5 {
		t.Errorf("Sum(calls) = %d; want 5", got)
	}
	if got := r.Sum("calls", attribute.String("outcome", "ok")); got != 2 {
		t.Errorf("Sum(calls, outcome=ok) = %d; want 2", got)
	}
	if got := r.Sum("calls", attribute.String("outcome", "ok"), attribute.String("tool", "other")); got != 0 {
		t.Errorf("Sum(calls, outcome=ok, tool=other) = %d; want 0", got)
	}
	if got := r.Sum("other"); got != 0 {
		t.Errorf("Sum(other) = %d; want 0", got)
	}
}

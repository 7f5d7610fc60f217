// Package metrictest records what code adds to OpenTelemetry counters, for
// the library's tests that count an event through the metrics API.
//
// The library's module leaves the OpenTelemetry SDK out of its
// requirements, so that a program importing the library does not carry it
// in its module graph; the tests of the SDK side (instrument kinds, units,
// buckets, spans) live in e2e/telemetry, whose module has the SDK. A
// Recorder is an API-level sink: every instrument other than Int64Counter
// is the API's no-op.
package metrictest

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Recorder is a metric.MeterProvider that keeps every Int64Counter add.
type Recorder struct {
	noop.MeterProvider

	mu   sync.Mutex
	adds []Add
}

// Add is one counter add.
type Add struct {
	Name  string
	Value int64
	Attrs attribute.Set
}

// Meter returns a meter whose Int64Counters record into r.
func (r *Recorder) Meter(string, ...metric.MeterOption) metric.Meter { return meter{r: r} }

// Sum is the total added to the counter name by adds whose attributes hold
// every key and value of match.
func (r *Recorder) Sum(name string, match ...attribute.KeyValue) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, a := range r.adds {
		if a.Name == name && holds(a.Attrs, match) {
			n += a.Value
		}
	}
	return n
}

func holds(s attribute.Set, match []attribute.KeyValue) bool {
	for _, kv := range match {
		if v, ok := s.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

type meter struct {
	noop.Meter
	r *Recorder
}

func (m meter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return counter{name: name, r: m.r}, nil
}

type counter struct {
	noop.Int64Counter
	name string
	r    *Recorder
}

func (c counter) Add(_ context.Context, v int64, opts ...metric.AddOption) {
	attrs := metric.NewAddConfig(opts).Attributes()
	c.r.mu.Lock()
	c.r.adds = append(c.r.adds, Add{Name: c.name, Value: v, Attrs: attrs})
	c.r.mu.Unlock()
}

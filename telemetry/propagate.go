package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// W3C trace context entries in _meta. The MCP specification reserves
// exactly these bare names (no prefix) for trace propagation.
const (
	MetaTraceParent = "traceparent"
	MetaTraceState  = "tracestate"
)

// propagator is fixed to W3C trace context, whatever the global
// propagator: both ends of a call must agree, and _meta carries only the
// two names the specification reserves.
var propagator = propagation.TraceContext{}

// metaCarrier adapts a _meta map to the propagation API.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes the span context of ctx into meta as traceparent (and
// tracestate when there is one). It writes nothing when ctx carries no
// valid span context. meta must be a map the caller owns: build a fresh
// one per request.
func Inject(ctx context.Context, meta map[string]any) {
	if meta == nil {
		return
	}
	propagator.Inject(ctx, metaCarrier(meta))
}

// Extract returns ctx with the remote span context found in meta, so a
// span started from it joins the caller's trace. A missing or malformed
// traceparent leaves ctx as it is.
func Extract(ctx context.Context, meta map[string]any) context.Context {
	if meta == nil {
		return ctx
	}
	return propagator.Extract(ctx, metaCarrier(meta))
}

// IDs returns the trace id and span id of the span in ctx as lowercase
// hex, the form records store; both are empty when ctx has no valid span
// context.
func IDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}

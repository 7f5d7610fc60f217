package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

const (
	traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanHex  = "00f067aa0ba902b7"
	parent   = "00-" + traceHex + "-" + spanHex + "-01"
)

func spanContext(t *testing.T, state string) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceHex)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(spanHex)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trace.ParseTraceState(state)
	if err != nil {
		t.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
}

func TestInject(t *testing.T) {
	cases := []struct {
		name string
		ctx  func(t *testing.T) context.Context
		want mcp.Meta
	}{
		{"span context", func(t *testing.T) context.Context {
			return trace.ContextWithSpanContext(context.Background(), spanContext(t, ""))
		}, mcp.Meta{"other": "kept", telemetry.MetaTraceParent: parent}},
		{"span context with trace state", func(t *testing.T) context.Context {
			return trace.ContextWithSpanContext(context.Background(), spanContext(t, "vendor=abc"))
		}, mcp.Meta{"other": "kept", telemetry.MetaTraceParent: parent, telemetry.MetaTraceState: "vendor=abc"}},
		{"no span", func(*testing.T) context.Context { return context.Background() }, mcp.Meta{"other": "kept"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			meta := mcp.Meta{"other": "kept"}
			telemetry.Inject(c.ctx(t), meta)
			if len(meta) != len(c.want) {
				t.Fatalf("Inject wrote %v; want %v", meta, c.want)
			}
			for k, v := range c.want {
				if meta[k] != v {
					t.Errorf("Inject: meta[%q] = %v; want %v", k, meta[k], v)
				}
			}
		})
	}
	telemetry.Inject(trace.ContextWithSpanContext(context.Background(), spanContext(t, "")), nil) // must not panic
}

func TestExtract(t *testing.T) {
	cases := []struct {
		name        string
		meta        mcp.Meta
		trace, span string
	}{
		{"valid", mcp.Meta{telemetry.MetaTraceParent: parent}, traceHex, spanHex},
		{"valid with state", mcp.Meta{telemetry.MetaTraceParent: parent, telemetry.MetaTraceState: "vendor=abc"}, traceHex, spanHex},
		{"absent", mcp.Meta{"io.github.mcpledger/idempotency-key": "k"}, "", ""},
		{"nil", nil, "", ""},
		{"not a string", mcp.Meta{telemetry.MetaTraceParent: 42}, "", ""},
		{"malformed", mcp.Meta{telemetry.MetaTraceParent: "00-xyz-abc-01"}, "", ""},
		{"zero trace id", mcp.Meta{telemetry.MetaTraceParent: "00-00000000000000000000000000000000-" + spanHex + "-01"}, "", ""},
		{"prefixed name is not ours", mcp.Meta{"io.example/traceparent": parent}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := telemetry.Extract(context.Background(), c.meta)
			tid, sid := telemetry.IDs(ctx)
			if tid != c.trace || sid != c.span {
				t.Fatalf("IDs(Extract(%v)) = %q, %q; want %q, %q", c.meta, tid, sid, c.trace, c.span)
			}
			if c.trace != "" && !trace.SpanContextFromContext(ctx).IsRemote() {
				t.Errorf("Extract(%v) span context is not remote", c.meta)
			}
		})
	}
}

// TestNoTracerNoTraceparent: with a no-op tracer and no caller span there
// is no trace to join, so nothing is written to _meta or the record.
func TestNoTracerNoTraceparent(t *testing.T) {
	tel := telemetry.New(ledger.SideClient, &telemetry.Options{TracerProvider: noop.NewTracerProvider()})
	ctx, c := tel.Start(context.Background(), "pay")
	defer c.End(ctx, telemetry.Result{Outcome: ledger.OutcomeSucceeded})
	meta := mcp.Meta{}
	telemetry.Inject(ctx, meta)
	if tid, sid := telemetry.IDs(ctx); tid != "" || sid != "" || len(meta) != 0 {
		t.Fatalf("no-op tracer: IDs = %q, %q and meta %v; want nothing", tid, sid, meta)
	}
	if telemetry.CallFrom(ctx) != c {
		t.Fatalf("CallFrom(ctx) is not the Call Start returned")
	}
}

func TestNilCallIsANoOp(t *testing.T) {
	ctx := context.Background()
	c := telemetry.CallFrom(ctx)
	if c != nil {
		t.Fatalf("CallFrom(empty ctx) = %v; want nil", c)
	}
	c.InProgressWait(ctx)
	c.EnteredUnknown(ctx, "x")
	c.Executed()
	c.SetAttempts(3)
	c.Bypass()
	c.End(ctx, telemetry.Result{Outcome: ledger.OutcomeSucceeded})
	if c.Waited() || c.Unknown() || c.Ran() {
		t.Fatalf("nil Call reports something recorded")
	}
}

// FuzzExtract: whatever _meta holds, Extract never fails the call, and a
// context it accepts carries ids taken from the traceparent that travel
// unchanged through Inject.
func FuzzExtract(f *testing.F) {
	f.Add(parent, "vendor=abc")
	f.Add("00-"+traceHex+"-"+spanHex+"-00", "")
	f.Add("ff-"+traceHex+"-"+spanHex+"-01", "a=b,c=d")
	f.Add("00-xyz-abc-01", "=")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		ctx := telemetry.Extract(context.Background(), mcp.Meta{telemetry.MetaTraceParent: tp, telemetry.MetaTraceState: ts})
		tid, sid := telemetry.IDs(ctx)
		if (tid == "") != (sid == "") {
			t.Fatalf("IDs = %q, %q; want both or neither", tid, sid)
		}
		if tid == "" {
			return
		}
		if !strings.Contains(tp, tid) || !strings.Contains(tp, sid) {
			t.Fatalf("IDs %q, %q do not come from traceparent %q", tid, sid, tp)
		}
		meta := mcp.Meta{}
		telemetry.Inject(ctx, meta)
		again := telemetry.Extract(context.Background(), meta)
		if t2, s2 := telemetry.IDs(again); t2 != tid || s2 != sid {
			t.Fatalf("after Inject and Extract IDs = %q, %q; want %q, %q", t2, s2, tid, sid)
		}
	})
}

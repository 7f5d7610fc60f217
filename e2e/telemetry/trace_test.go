package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

// seen is what the tool handler saw of the trace.
type seen struct {
	traceparent any
	span        trace.SpanContext
}

func TestTraceJoinsClientAndServer(t *testing.T) {
	r := newRig(t, nil)
	handlerSaw := make(chan seen, 1)
	r.setHandler(func(ctx context.Context, req *mcp.CallToolRequest) error {
		handlerSaw <- seen{traceparent: req.Params.Meta[telemetry.MetaTraceParent], span: trace.SpanContextFromContext(ctx)}
		return nil
	})
	ctx, step := r.tp.Tracer("agent").Start(context.Background(), "agent step")
	ctx = client.WithKey(ctx, key)
	mustCall(t, r.client, ctx, 5)
	step.End()
	saw := <-handlerSaw

	cs := onlySpan(t, r.spans.Ended(), trace.SpanKindClient)
	ss := onlySpan(t, r.spans.Ended(), trace.SpanKindServer)
	traceID := step.SpanContext().TraceID()
	checks := []struct {
		what      string
		got, want any
	}{
		{"client span name", cs.Name(), "tools/call pay"},
		{"server span name", ss.Name(), "tools/call pay"},
		{"client span trace", cs.SpanContext().TraceID(), traceID},
		{"server span trace", ss.SpanContext().TraceID(), traceID},
		{"client span parent", cs.Parent().SpanID(), step.SpanContext().SpanID()},
		{"server span parent", ss.Parent().SpanID(), cs.SpanContext().SpanID()},
		{"server span parent is remote", ss.Parent().IsRemote(), true},
		{"traceparent in _meta", saw.traceparent, "00-" + traceID.String() + "-" + cs.SpanContext().SpanID().String() + "-01"},
		{"handler's span", saw.span.SpanID(), ss.SpanContext().SpanID()},
		{"client span outcome", attr(cs, telemetry.AttrOutcome), "succeeded"},
		{"server span outcome", attr(ss, telemetry.AttrOutcome), "succeeded"},
		{"client span attempts", attr(cs, telemetry.AttrAttempts), "1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v; want %v", c.what, c.got, c.want)
		}
	}

	for _, side := range []struct {
		name  string
		store ledger.Store
		span  sdktrace.ReadOnlySpan
	}{{ledger.LayerClient, r.cstore, cs}, {ledger.LayerServer, r.sstore, ss}} {
		id := ledger.ID{Tenant: tenant, Layer: side.name, Tool: "pay", Key: key}
		rec, err := side.store.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("%s ledger Get(%q) = %v", side.name, key, err)
		}
		if rec.TraceID != traceID.String() || rec.SpanID != side.span.SpanContext().SpanID().String() {
			t.Errorf("%s record trace %s span %s; want %s and its own span %s",
				side.name, rec.TraceID, rec.SpanID, traceID, side.span.SpanContext().SpanID())
		}
	}
}

func TestReplayIsAClientSpanOnly(t *testing.T) {
	r := newRig(t, nil)
	mustCall(t, r.client, keyed(), 5)
	mustCall(t, r.client, keyed(), 5)
	var client, server int
	for _, s := range r.spans.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindClient:
			client++
		case trace.SpanKindServer:
			server++
		}
	}
	if client != 2 || server != 1 {
		t.Fatalf("spans: %d client, %d server; want 2 and 1 (a replay never reaches the server)", client, server)
	}
}

// TestNoKeyInTelemetry looks through every span, span event and metric
// data point of a run that touches every instrument for the key.
func TestNoKeyInTelemetry(t *testing.T) {
	const secretKey = "ord-7f3a91c2e55d"
	r := newRig(t, nil)
	ctx := client.WithKey(context.Background(), secretKey)
	mustCall(t, r.client, ctx, 5)
	mustCall(t, r.client, ctx, 5)
	mustCall(t, r.newClient(openStore(t, nil), nil), ctx, 5)
	if _, err := r.client.Call(ctx, pay(6, "bob")); err == nil {
		t.Fatalf("Call with other arguments = nil error; want a key conflict")
	}

	allowed := map[attribute.Key]bool{
		telemetry.AttrTool: true, telemetry.AttrSide: true, telemetry.AttrOutcome: true, telemetry.AttrState: true,
		telemetry.AttrReason: true, telemetry.AttrMethod: true, telemetry.AttrAttempts: true,
		telemetry.AttrOperation: true, telemetry.AttrProtocolVersion: true, telemetry.AttrErrorType: true,
		telemetry.AttrSessionID: true,
	}
	check := func(where string, kvs []attribute.KeyValue) {
		t.Helper()
		for _, kv := range kvs {
			if !allowed[kv.Key] {
				t.Errorf("%s has attribute %q; want only %v", where, kv.Key, allowed)
			}
			for _, bad := range []string{secretKey, ledger.ShortHash(secretKey)} {
				if strings.Contains(kv.Value.String(), bad) {
					t.Errorf("%s attribute %s = %q holds the key", where, kv.Key, kv.Value.String())
				}
			}
		}
	}
	spans := r.spans.Ended()
	if len(spans) == 0 {
		t.Fatalf("no spans recorded")
	}
	for _, s := range spans {
		if strings.Contains(s.Name(), secretKey) {
			t.Errorf("span name %q holds the key", s.Name())
		}
		check("span "+s.Name(), s.Attributes())
		for _, e := range s.Events() {
			check("span event "+e.Name, e.Attributes)
		}
	}
	points := 0
	for _, name := range append(instruments, semconvInstruments...) {
		for _, p := range r.collect(name) {
			points++
			check("metric "+name, p.attrs.ToSlice())
		}
	}
	if points == 0 {
		t.Fatalf("no metric data points recorded")
	}
}

func onlySpan(t *testing.T, spans []sdktrace.ReadOnlySpan, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans of kind %v; want 1", len(found), kind)
	}
	return found[0]
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.String()
		}
	}
	return ""
}

package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/ledger"
)

// maxCachedTools bounds the per-tool (protocol version and peer) cache; calls
// of tools past it build their attribute sets each time.
const maxCachedTools = 1024

// outcomes lists every outcome, to build their attribute sets up front.
var outcomes = []ledger.Outcome{
	ledger.OutcomeSucceeded, ledger.OutcomeFailed, ledger.OutcomeReplayed, ledger.OutcomeKeyConflict,
	ledger.OutcomeInProgress, ledger.OutcomeUnknown, ledger.OutcomeDenied, ledger.OutcomeNotSent,
	ledger.OutcomeInvalid, ledger.OutcomeError, ledger.OutcomeRejected, ledger.OutcomeAwaiting,
}

// toolAttrs are the attribute sets of one tool on one side (and one
// negotiated protocol version), built once: an attribute set costs
// allocations, and a replay answered from the ledger in tens of
// microseconds should not spend them on its metrics.
type toolAttrs struct {
	spanName  string
	spanStart []trace.SpanStartOption
	base      metric.MeasurementOption // tool, side
	calls     map[ledger.Outcome]metric.MeasurementOption
	dups      map[ledger.Outcome]metric.MeasurementOption
	hits      map[ledger.State]metric.MeasurementOption
	// ops are the operation duration's sets (the semantic conventions'
	// attributes and the outcome), exec the execution duration's.
	ops  map[ledger.Outcome]metric.MeasurementOption
	exec map[ledger.Outcome]metric.MeasurementOption
}

// attrsKey names a cached toolAttrs.
type attrsKey struct {
	tool, protocol string
	peer           Peer
}

func (t *Telemetry) newToolAttrs(k attrsKey) *toolAttrs {
	toolKV := AttrTool.String(k.tool)
	kind := trace.SpanKindClient
	if t.side == ledger.SideServer {
		kind = trace.SpanKindServer
	}
	a := &toolAttrs{
		// The conventions' span name: "{mcp.method.name} {target}".
		spanName: string(mcpconv.MethodNameToolsCall) + " " + k.tool,
		spanStart: []trace.SpanStartOption{trace.WithSpanKind(kind),
			trace.WithAttributes(append([]attribute.KeyValue{methodKV, operationKV, toolKV, t.sideKV}, k.peer.attrs(t.side)...)...)},
		base:  metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV)),
		calls: make(map[ledger.Outcome]metric.MeasurementOption, len(outcomes)),
		dups:  make(map[ledger.Outcome]metric.MeasurementOption, 3),
		hits:  make(map[ledger.State]metric.MeasurementOption, len(ledger.States)),
		ops:   make(map[ledger.Outcome]metric.MeasurementOption, len(outcomes)),
		exec:  make(map[ledger.Outcome]metric.MeasurementOption, len(outcomes)),
	}
	for _, o := range outcomes {
		outKV := AttrOutcome.String(string(o))
		a.calls[o] = metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV, outKV))
		a.exec[o] = metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV, outKV))
		a.ops[o] = metric.WithAttributeSet(attribute.NewSet(t.operationAttrs(k, o)...))
	}
	for _, o := range []ledger.Outcome{ledger.OutcomeReplayed, ledger.OutcomeInProgress, ledger.OutcomeUnknown} {
		a.dups[o] = metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV, AttrReason.String(string(o))))
	}
	for _, s := range ledger.States {
		a.hits[s] = metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV, AttrState.String(string(s))))
	}
	return a
}

// operationAttrs are the attributes of an operation duration: those of
// the MCP semantic conventions, and the outcome.
func (t *Telemetry) operationAttrs(k attrsKey, o ledger.Outcome) []attribute.KeyValue {
	kvs := []attribute.KeyValue{methodKV, operationKV, AttrTool.String(k.tool), AttrOutcome.String(string(o))}
	kvs = append(kvs, k.peer.attrs(t.side)...)
	if k.protocol != "" {
		kvs = append(kvs, AttrProtocolVersion.String(k.protocol))
	}
	if e := errorType(o); e != "" {
		kvs = append(kvs, AttrErrorType.String(e))
	}
	return kvs
}

// errorTypeTool is the error.type the MCP semantic conventions give a
// tool that said no (isError). Their text names it, but v1.41.0's mcpconv
// has no constant for it, as it has for "_OTHER".
const errorTypeTool = "tool_error"

// errorType is the error.type of an outcome, empty when the call got the
// tool's answer. The other failures are named by their outcome.
func errorType(o ledger.Outcome) string {
	switch o {
	case ledger.OutcomeSucceeded, ledger.OutcomeReplayed:
		return ""
	case ledger.OutcomeFailed:
		return errorTypeTool
	case ledger.OutcomeError:
		return string(mcpconv.ErrorTypeOther)
	}
	return string(o)
}

// attrs returns the cached attribute sets of a tool, with the negotiated
// protocol version (empty when unknown) and the peer of k.
func (t *Telemetry) attrs(k attrsKey) *toolAttrs {
	if a, ok := t.tools.Load(k); ok {
		return a.(*toolAttrs)
	}
	a := t.newToolAttrs(k)
	if t.toolCount.Load() >= maxCachedTools {
		return a
	}
	if got, loaded := t.tools.LoadOrStore(k, a); loaded {
		return got.(*toolAttrs)
	}
	t.toolCount.Add(1)
	return a
}

// option returns the cached option for key, or builds one from kvs.
func option[K comparable](m map[K]metric.MeasurementOption, key K, kvs ...attribute.KeyValue) metric.MeasurementOption {
	if o, ok := m[key]; ok {
		return o
	}
	return metric.WithAttributes(kvs...)
}

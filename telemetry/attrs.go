package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/ledger"
)

// maxCachedTools bounds the per-tool cache; calls of tools past it build
// their attribute sets each time.
const maxCachedTools = 1024

// outcomes lists every outcome, to build their attribute sets up front.
var outcomes = []ledger.Outcome{
	ledger.OutcomeSucceeded, ledger.OutcomeFailed, ledger.OutcomeReplayed, ledger.OutcomeKeyConflict,
	ledger.OutcomeInProgress, ledger.OutcomeUnknown, ledger.OutcomeDenied, ledger.OutcomeNotSent,
	ledger.OutcomeInvalid, ledger.OutcomeError,
}

// toolAttrs are the attribute sets of one tool on one side, built once:
// an attribute set costs allocations, and a replay answered from the
// ledger in tens of microseconds should not spend them on its metrics.
type toolAttrs struct {
	spanName  string
	spanStart []trace.SpanStartOption
	base      metric.MeasurementOption // tool, side
	calls     map[ledger.Outcome]metric.MeasurementOption
	dups      map[ledger.Outcome]metric.MeasurementOption
	hits      map[ledger.State]metric.MeasurementOption
}

func (t *Telemetry) newToolAttrs(tool string) *toolAttrs {
	toolKV := AttrTool.String(tool)
	kind := trace.SpanKindClient
	if t.side == ledger.SideServer {
		kind = trace.SpanKindServer
	}
	a := &toolAttrs{
		spanName: "tools/call " + tool,
		spanStart: []trace.SpanStartOption{trace.WithSpanKind(kind),
			trace.WithAttributes(AttrMethod.String("tools/call"), toolKV, t.sideKV)},
		base:  metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV)),
		calls: make(map[ledger.Outcome]metric.MeasurementOption, len(outcomes)),
		dups:  make(map[ledger.Outcome]metric.MeasurementOption, 3),
		hits:  make(map[ledger.State]metric.MeasurementOption, len(ledger.States)),
	}
	for _, o := range outcomes {
		a.calls[o] = metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV, AttrOutcome.String(string(o))))
	}
	for _, o := range []ledger.Outcome{ledger.OutcomeReplayed, ledger.OutcomeInProgress, ledger.OutcomeUnknown} {
		a.dups[o] = metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV, AttrReason.String(string(o))))
	}
	for _, s := range ledger.States {
		a.hits[s] = metric.WithAttributeSet(attribute.NewSet(toolKV, t.sideKV, AttrState.String(string(s))))
	}
	return a
}

// attrs returns the cached attribute sets of tool.
func (t *Telemetry) attrs(tool string) *toolAttrs {
	if a, ok := t.tools.Load(tool); ok {
		return a.(*toolAttrs)
	}
	a := t.newToolAttrs(tool)
	if t.toolCount.Load() >= maxCachedTools {
		return a
	}
	if got, loaded := t.tools.LoadOrStore(tool, a); loaded {
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

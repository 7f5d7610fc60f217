package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/ledger"
)

// ScopeName is the instrumentation scope of every meter and tracer here.
const ScopeName = "github.com/mcpledger/mcpledger"

// SchemaURL is the OpenTelemetry semantic conventions version the names
// below follow; the meter and the tracer carry it.
const SchemaURL = semconv.SchemaURL

// Instrument names. METRICS.md describes each with its unit and attributes.
// The two operation durations are the OpenTelemetry MCP semantic
// conventions' (mcpconv); the rest are ours, under mcpledger.
const (
	MetricClientOperationDuration = "mcp.client.operation.duration"
	MetricServerOperationDuration = "mcp.server.operation.duration"
	MetricExecutionDuration       = "mcpledger.execution.duration"
	MetricUnknownOpen             = "mcpledger.records.unknown.open"
	MetricCalls                   = "mcpledger.calls"
	MetricDuplicateHits           = "mcpledger.duplicate_hits"
	MetricKeyConflicts            = "mcpledger.key_conflicts"
	MetricInProgressWaits         = "mcpledger.in_progress.waits"
	MetricInProgressTimeouts      = "mcpledger.in_progress.timeouts"
	MetricUnknown                 = "mcpledger.records.unknown"
	MetricDownstreamDuplicates    = "mcpledger.downstream_duplicates"
	MetricReplayDuration          = "mcpledger.replay.duration"
	MetricAttempts                = "mcpledger.call.attempts"
	MetricEventsDropped           = "mcpledger.events.dropped"
)

// Attribute keys: the semantic conventions' where they have one, ours
// under mcpledger. None of them ever holds a key, arguments or a result.
const (
	// AttrTool is the tool's name (gen_ai.tool.name).
	AttrTool = semconv.GenAIToolNameKey
	// AttrOperation is gen_ai.operation.name, always "execute_tool".
	AttrOperation = semconv.GenAIOperationNameKey
	// AttrMethod is mcp.method.name, always "tools/call".
	AttrMethod = semconv.McpMethodNameKey
	// AttrSessionID is mcp.session.id, on spans only (it is unbounded).
	AttrSessionID = semconv.McpSessionIDKey
	// AttrProtocolVersion is mcp.protocol.version, the negotiated one.
	AttrProtocolVersion = semconv.McpProtocolVersionKey
	// AttrErrorType is error.type: "tool_error" for a tool that said no
	// (isError), else the outcome (mcpconv.ErrorTypeOther, "_OTHER", for
	// error); absent on success.
	AttrErrorType = semconv.ErrorTypeKey
	// AttrResponseStatusCode is the JSON-RPC error code a peer answered
	// with, on the operation duration and the span.
	AttrResponseStatusCode = semconv.RPCResponseStatusCodeKey

	AttrSide    = attribute.Key("mcpledger.side")
	AttrOutcome = attribute.Key("mcpledger.outcome")
	AttrState   = attribute.Key("mcpledger.state")
	AttrReason  = attribute.Key("mcpledger.reason")
	// AttrAttempts is a span attribute: the requests a call sent.
	AttrAttempts = attribute.Key("mcpledger.attempts")
)

// The values of gen_ai.operation.name and mcp.method.name for every call
// here.
var (
	operationKV = AttrOperation.String(string(mcpconv.GenAIOperationNameExecuteTool))
	methodKV    = AttrMethod.String(string(mcpconv.MethodNameToolsCall))
)

// Defaults for zero fields of Options.
const (
	DefaultFlushEvery     = time.Second
	DefaultBatchSize      = 256
	DefaultMaxPending     = 10000
	DefaultEventRetention = 7 * 24 * time.Hour
)

// Options configure a Telemetry. The zero value (or nil) uses the global
// OpenTelemetry providers and keeps no events.
type Options struct {
	// MeterProvider and TracerProvider are where instruments and spans come
	// from (otel.GetMeterProvider and otel.GetTracerProvider when nil).
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// Events receives one event per finished call, written in the
	// background in batches so no call waits on the write. Nil keeps none.
	Events ledger.EventLog
	// FlushEvery bounds how long an event waits to be written
	// (DefaultFlushEvery when zero); a full batch is written at once.
	FlushEvery time.Duration
	// BatchSize is how many events one write carries (DefaultBatchSize).
	BatchSize int
	// MaxPending is how many unwritten events are kept while the store is
	// slow or down; past it new events are dropped and counted in
	// mcpledger.events.dropped (DefaultMaxPending).
	MaxPending int
	// EventRetention: events older than this are deleted about once an
	// hour (DefaultEventRetention when zero; negative keeps them all).
	EventRetention time.Duration
	// Logger gets one Debug line per finished call (keys as
	// ledger.ShortHash) and the event writer's failures. Discarded when nil.
	Logger *slog.Logger
	// Now is the clock of events and latencies (time.Now when nil).
	Now func() time.Time
	// Peer is where the calls go (network.transport, server.address and
	// server.port on their spans and operation durations); a Call's
	// SetPeer overrides it. The zero value emits none.
	Peer Peer
	// Unknown, when set, feeds the mcpledger.records.unknown.open gauge:
	// it is asked for its count each time the metrics are collected. When
	// it is an OpenCounter too (the SQLite and PostgreSQL stores are), it
	// also feeds the age of the oldest UNKNOWN record and the approval
	// backlog (see OpenCounter).
	Unknown UnknownCounter
}

// UnknownCounter is the optional part of a Store that counts the records
// in UNKNOWN now (every tenant), cheaply enough to be asked at each metrics
// collection. The SQLite and PostgreSQL stores have it.
type UnknownCounter interface {
	CountUnknown(ctx context.Context) (int64, error)
}

// Telemetry is the instruments, the tracer and the event writer of one
// side (a client.Client or a server.Guard). It is safe for concurrent use.
type Telemetry struct {
	side    ledger.Side
	sideKV  attribute.KeyValue
	tracer  trace.Tracer
	log     *slog.Logger
	now     func() time.Time
	events  *eventWriter // nil: no event log
	peer    Peer         // Options.Peer
	dropped metric.Int64Counter

	// tools caches *toolAttrs by tool name; toolCount bounds it.
	tools     sync.Map
	toolCount atomic.Int64

	calls                metric.Int64Counter
	duplicateHits        metric.Int64Counter
	keyConflicts         metric.Int64Counter
	inProgressWaits      metric.Int64Counter
	inProgressTimeouts   metric.Int64Counter
	unknown              metric.Int64Counter
	downstreamDuplicates metric.Int64Counter
	replayDuration       metric.Float64Histogram
	attempts             metric.Int64Histogram
	// operationDuration is mcp.client.operation.duration on the client
	// side, mcp.server.operation.duration on the server side.
	operationDuration metric.Float64Histogram
	executionDuration metric.Float64Histogram
	resolutions       *Resolutions
	// unknownGauge is the callback of the open-record gauges (nil without
	// Options.Unknown); Close unregisters it.
	unknownGauge metric.Registration
}

// replayBuckets suit a ledger read (tens of microseconds) up to a follower
// that waited seconds for the execution it duplicates.
var replayBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

var attemptBuckets = []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20}

// operationBuckets are the ones the MCP semantic conventions recommend for
// the operation durations.
var operationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// New returns the telemetry of one side. It never fails: an instrument the
// provider refuses is reported to otel.Handle and replaced by a no-op, so
// observability can never stop a call.
func New(side ledger.Side, opts *Options) *Telemetry {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := o.MeterProvider.Meter(ScopeName, metric.WithSchemaURL(SchemaURL))
	t := &Telemetry{
		side:   side,
		sideKV: AttrSide.String(string(side)),
		tracer: o.TracerProvider.Tracer(ScopeName, trace.WithSchemaURL(SchemaURL)),
		log:    o.Logger,
		now:    o.Now,
		peer:   o.Peer,
	}
	t.calls = counter(m, MetricCalls, "{call}", "Tool calls through the ledger, by how they ended (outcome).")
	t.duplicateHits = counter(m, MetricDuplicateHits, "{call}", "Calls answered by replaying an earlier execution's stored result.")
	t.keyConflicts = counter(m, MetricKeyConflicts, "{call}", "Calls refused because their key was first used with other arguments.")
	t.inProgressWaits = counter(m, MetricInProgressWaits, "{call}", "Calls that waited for another caller's execution of the same key.")
	t.inProgressTimeouts = counter(m, MetricInProgressTimeouts, "{call}", "Calls that gave up waiting for another caller's execution (in progress).")
	t.unknown = counter(m, MetricUnknown, "{record}", "Records that entered UNKNOWN: the outcome must be reconciled.")
	t.downstreamDuplicates = counter(m, MetricDownstreamDuplicates, "{call}", "Duplicate requests the server stopped before its handler.")
	t.dropped = counter(m, MetricEventsDropped, "{event}", "Call events not written to the event log (store slow, down or closed).")
	var err error
	t.replayDuration, err = m.Float64Histogram(MetricReplayDuration, metric.WithUnit("s"),
		metric.WithDescription("Time to answer a duplicate from the ledger, from call start to answer."),
		metric.WithExplicitBucketBoundaries(replayBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	t.attempts, err = m.Int64Histogram(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Requests one client call sent, retries included."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	buckets := metric.WithExplicitBucketBoundaries(operationBuckets...)
	if side == ledger.SideServer {
		var h mcpconv.ServerOperationDuration
		h, err = mcpconv.NewServerOperationDuration(m, buckets)
		t.operationDuration = h.Inst()
	} else {
		var h mcpconv.ClientOperationDuration
		h, err = mcpconv.NewClientOperationDuration(m, buckets)
		t.operationDuration = h.Inst()
	}
	if err != nil {
		otel.Handle(err)
	}
	t.executionDuration, err = m.Float64Histogram(MetricExecutionDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of calls that ran the tool, from call start to answer, retries and waits included."),
		buckets)
	if err != nil {
		otel.Handle(err)
	}
	t.resolutions = newResolutions(m)
	if o.Unknown != nil {
		t.unknownGauge = observeOpen(m, t.sideKV, o.Unknown, o.Now)
	}
	if o.Events != nil {
		t.events = newEventWriter(o, t.dropped)
	}
	return t
}

func counter(m metric.Meter, name, unit, desc string) metric.Int64Counter {
	c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		// The API returns a usable no-op instrument with the error.
		otel.Handle(err)
	}
	return c
}

// Side is the side this Telemetry reports.
func (t *Telemetry) Side() ledger.Side { return t.side }

// Flush writes every pending event now.
func (t *Telemetry) Flush(ctx context.Context) error {
	if t == nil || t.events == nil {
		return nil
	}
	return t.events.flush(ctx)
}

// Close stops the background writer after writing every pending event,
// and stops asking the store for the UNKNOWN gauge. Events of calls that
// end later are dropped and counted.
func (t *Telemetry) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var err error
	if t.unknownGauge != nil {
		err = t.unknownGauge.Unregister()
		if err != nil {
			err = fmt.Errorf("telemetry: unregistering %s: %w", MetricUnknownOpen, err)
		}
	}
	if t.events == nil {
		return err
	}
	return errors.Join(err, t.events.close(ctx))
}

// EnteredUnknown counts n records that entered UNKNOWN outside any one
// call, such as leases found expired by a sweep; tool may be empty when it
// is not known.
func (t *Telemetry) EnteredUnknown(ctx context.Context, tool, reason string, n int) {
	if t == nil || n <= 0 {
		return
	}
	attrs := []attribute.KeyValue{t.sideKV, AttrReason.String(reason)}
	if tool != "" {
		attrs = append(attrs, AttrTool.String(tool))
	}
	t.unknown.Add(ctx, int64(n), metric.WithAttributes(attrs...))
}

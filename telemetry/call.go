package telemetry

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/ledger"
)

// Call is one tool call being observed: its span, and what happened on the
// way that only the code deep inside the call knows (a wait, an UNKNOWN).
// Start puts it in the context, so that code finds it with CallFrom.
//
// Every method is safe on a nil *Call (a call made without telemetry) and
// for concurrent use: a shared in-process execution may report into the
// Call of the caller that started it after that caller has gone.
type Call struct {
	t     *Telemetry
	span  trace.Span
	tool  string
	start time.Time
	attrs *toolAttrs
	log   *slog.Logger // the Debug line's

	waited   atomic.Bool
	unknown  atomic.Bool // this call turned its record UNKNOWN
	executed atomic.Bool // this call ran the tool (server: the handler)
	bypass   atomic.Bool
	ended    atomic.Bool
	attempts atomic.Int64
	session  atomic.Pointer[session]
	peer     atomic.Pointer[Peer] // SetPeer's; nil: the Telemetry's
}

// session is what SetSession recorded.
type session struct{ id, protocol string }

type callKey struct{}

// Start begins observing a call of tool: it starts the span (a client span
// on the client side, a server span on the server side, child of whatever
// span ctx carries) and returns ctx holding both.
func (t *Telemetry) Start(ctx context.Context, tool string) (context.Context, *Call) {
	return t.StartLogged(ctx, tool, nil)
}

// StartLogged is Start with the call's Debug line going to log (nil:
// Options.Logger), so that a Telemetry many clients share (a proxy's, one
// client per host session) logs each call with its own client's
// attributes.
func (t *Telemetry) StartLogged(ctx context.Context, tool string, log *slog.Logger) (context.Context, *Call) {
	a := t.attrs(attrsKey{tool: tool, peer: t.peer})
	ctx, span := t.tracer.Start(ctx, a.spanName, a.spanStart...)
	if log == nil {
		log = t.log
	}
	c := &Call{t: t, span: span, tool: tool, start: t.now(), attrs: a, log: log}
	return context.WithValue(ctx, callKey{}, c), c
}

// CallFrom returns the Call that Start put in ctx, or nil.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// InProgressWait records that the call is about to wait for another
// caller's execution of the same key. A call that waits several times
// (a server re-checking a lease between waits) counts once.
func (c *Call) InProgressWait(ctx context.Context) {
	if c == nil || !c.waited.CompareAndSwap(false, true) {
		return
	}
	c.t.inProgressWaits.Add(ctx, 1, c.attrs.base)
	c.span.AddEvent("in_progress_wait")
}

// EnteredUnknown records that this call turned its record UNKNOWN, and why
// (the record's error kind).
func (c *Call) EnteredUnknown(ctx context.Context, reason string) {
	if c == nil {
		return
	}
	c.unknown.Store(true)
	c.t.unknown.Add(ctx, 1, metric.WithAttributes(AttrTool.String(c.tool), c.t.sideKV, AttrReason.String(reason)))
	c.span.AddEvent("unknown", trace.WithAttributes(AttrReason.String(reason)))
}

// Executed records that this call ran the tool rather than following an
// earlier request with the same key.
func (c *Call) Executed() {
	if c == nil {
		return
	}
	c.executed.Store(true)
}

// SetSession records the MCP session the call went through: its id
// (mcp.session.id on the span; empty for transports without one) and the
// negotiated protocol version (mcp.protocol.version on the span and the
// operation duration). A call that reconnected reports its last session.
func (c *Call) SetSession(id, protocolVersion string) {
	if c == nil {
		return
	}
	if old := c.session.Load(); old != nil && old.id == id && old.protocol == protocolVersion {
		return
	}
	c.session.Store(&session{id: id, protocol: protocolVersion})
	if id != "" {
		c.span.SetAttributes(AttrSessionID.String(id))
	}
	if protocolVersion != "" {
		c.span.SetAttributes(AttrProtocolVersion.String(protocolVersion))
	}
}

// SetPeer records where the call went, when it is known per call (a
// server guard serving stdio and HTTP alike) rather than for every call
// of the Telemetry (Options.Peer): on the span now, on the operation
// duration at End.
func (c *Call) SetPeer(p Peer) {
	if c == nil || p == (Peer{}) {
		return
	}
	if old := c.peer.Load(); old != nil && *old == p {
		return
	}
	c.peer.Store(&p)
	c.span.SetAttributes(p.attrs(c.t.side)...)
}

// SetAttempts records how many requests the call sent.
func (c *Call) SetAttempts(n int) {
	if c == nil {
		return
	}
	c.attempts.Store(int64(n))
}

// Bypass marks a call that does not go through the ledger (a read-only
// tool): its span is kept, but it counts in no metric and leaves no event.
func (c *Call) Bypass() {
	if c == nil {
		return
	}
	c.bypass.Store(true)
}

// Waited, Unknown and Ran report what was recorded on the call.
func (c *Call) Waited() bool  { return c != nil && c.waited.Load() }
func (c *Call) Unknown() bool { return c != nil && c.unknown.Load() }
func (c *Call) Ran() bool     { return c != nil && c.executed.Load() }

// Result is how a call ended, as its side saw it.
type Result struct {
	Outcome ledger.Outcome
	// Tenant of the call's record; empty when the call never got as far as
	// a tenant (no event is written then).
	Tenant string
	// Key appears only as ledger.ShortHash, and only in the log line.
	Key string
	// State is the record's state: for a duplicate hit, the state of the
	// replayed record.
	State ledger.State
	// Duplicate: the call was answered from an earlier record of its key
	// without running the tool.
	Duplicate bool
	// ResponseCode is the JSON-RPC error code the peer answered the call
	// with (rpc.response.status_code); 0 when it answered with a result or
	// not at all.
	ResponseCode int64
}

// End records the call's outcome in the metrics, the event log and the
// span, and ends the span. Only the first End counts.
func (c *Call) End(ctx context.Context, r Result) {
	if c == nil || !c.ended.CompareAndSwap(false, true) {
		return
	}
	t := c.t
	elapsed := t.now().Sub(c.start)
	attempts := int(c.attempts.Load())
	c.span.SetAttributes(AttrOutcome.String(string(r.Outcome)))
	if r.ResponseCode != 0 {
		c.span.SetAttributes(AttrResponseStatusCode.String(strconv.FormatInt(r.ResponseCode, 10)))
	}
	if attempts > 0 {
		c.span.SetAttributes(AttrAttempts.Int(attempts))
	}
	if failed(r.Outcome) {
		c.span.SetAttributes(AttrErrorType.String(errorType(r.Outcome)))
		c.span.SetStatus(codes.Error, string(r.Outcome))
	}
	defer c.span.End()
	if c.bypass.Load() {
		return
	}
	a, key := c.attrs, attrsKey{tool: c.tool, peer: t.peer}
	if p := c.peer.Load(); p != nil {
		key.peer = *p
	}
	if s := c.session.Load(); s != nil {
		key.protocol = s.protocol
	}
	if key.protocol != "" || key.peer != t.peer {
		a = t.attrs(key)
	}
	toolKV := AttrTool.String(c.tool)
	// Ran: the call executed the tool rather than answering from the
	// ledger (client: it sent a request; server: the handler ran).
	ran := c.executed.Load() || (t.side == ledger.SideClient && attempts > 0)
	if ran {
		t.executionDuration.Record(ctx, elapsed.Seconds(), option(a.exec, r.Outcome, toolKV, t.sideKV, AttrOutcome.String(string(r.Outcome))))
	}
	// The MCP operation: every request the server answered; on the
	// client, only calls that sent one (a replay from the client's own
	// ledger made no MCP request).
	if t.side == ledger.SideServer || attempts > 0 {
		ops := option(a.ops, r.Outcome, t.operationAttrs(key, r.Outcome)...)
		if r.ResponseCode != 0 {
			// Rare (the peer refused), so its set is built here.
			ops = metric.WithAttributes(append(t.operationAttrs(key, r.Outcome),
				AttrResponseStatusCode.String(strconv.FormatInt(r.ResponseCode, 10)))...)
		}
		t.operationDuration.Record(ctx, elapsed.Seconds(), ops)
	}
	t.calls.Add(ctx, 1, option(a.calls, r.Outcome, toolKV, t.sideKV, AttrOutcome.String(string(r.Outcome))))
	switch r.Outcome {
	case ledger.OutcomeReplayed:
		t.duplicateHits.Add(ctx, 1, option(a.hits, r.State, toolKV, t.sideKV, AttrState.String(string(r.State))))
		t.replayDuration.Record(ctx, elapsed.Seconds(), a.base)
	case ledger.OutcomeKeyConflict:
		t.keyConflicts.Add(ctx, 1, a.base)
	case ledger.OutcomeInProgress:
		t.inProgressTimeouts.Add(ctx, 1, a.base)
	}
	if r.Duplicate && t.side == ledger.SideServer {
		t.downstreamDuplicates.Add(ctx, 1, option(a.dups, r.Outcome, toolKV, t.sideKV, AttrReason.String(string(r.Outcome))))
	}
	if attempts > 0 {
		t.attempts.Record(ctx, int64(attempts), a.base)
	}
	if t.events != nil && r.Tenant != "" {
		t.events.add(ledger.Event{
			Tenant: r.Tenant, Tool: c.tool, Side: t.side, Outcome: r.Outcome,
			Duplicate: r.Duplicate, Waited: c.waited.Load(), Attempts: attempts,
			Latency: elapsed, At: c.start,
		})
	}
	if c.log.Enabled(ctx, slog.LevelDebug) {
		args := []any{"tool", c.tool, "side", string(t.side), "outcome", string(r.Outcome), "duration", elapsed.String()}
		if attempts > 0 {
			args = append(args, "attempts", attempts)
		}
		if r.Key != "" {
			args = append(args, "key", ledger.ShortHash(r.Key))
		}
		if sc := c.span.SpanContext(); sc.IsValid() {
			args = append(args, "trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
		}
		c.log.DebugContext(ctx, "mcpledger call", args...)
	}
}

// failed reports the outcomes a span marks as errors: the caller did not
// get the tool's answer.
func failed(o ledger.Outcome) bool {
	switch o {
	case ledger.OutcomeSucceeded, ledger.OutcomeReplayed:
		return false
	}
	return true
}

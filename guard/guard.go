package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// Guard runs each guarded tool call once per (tenant, layer, tool, key)
// and answers every repeat from the record of the first. It is the whole
// server side of the ledger, for any MCP SDK: an adapter turns its SDK's
// request into a Request, its handler's return into an End, and the Answer
// back into its SDK's reply. A Guard is safe for concurrent use.
type Guard struct {
	store ledger.Store
	lc    *ledger.Lifecycle
	opts  Options
	tel   *telemetry.Telemetry
	// fences holds the highest fencing token seen per key.
	fences FenceBook
	// reconciled names the tools with a reconciler, sorted: the tools the
	// sweep lists due UNKNOWN records of.
	reconciled []string
}

// New returns a Guard that records operations in store. opts may be nil.
func New(store ledger.Store, opts *Options) *Guard {
	o := opts.withDefaults()
	g := &Guard{store: store, opts: o, tel: newTelemetry(store, o)}
	for tool, rc := range o.Reconcilers {
		if rc != nil && tool != "" {
			g.reconciled = append(g.reconciled, tool)
		}
	}
	slices.Sort(g.reconciled)
	g.lc = &ledger.Lifecycle{Store: store, Owner: o.Owner, Lease: o.Lease, Wait: o.InProgressWait, Now: o.Now, Logger: o.Logger,
		Waiting: func(ctx context.Context, _ *ledger.Record) { telemetry.CallFrom(ctx).InProgressWait(ctx) },
		Ended: func(ctx context.Context, on ledger.Trigger, tool string, n int) {
			kind := ledger.KindOwnerDead
			if on == ledger.OnLeaseExpired {
				kind = ledger.KindLeaseExpired
			}
			g.tel.EnteredUnknown(ctx, tool, kind, n)
		},
	}
	return g
}

// Options returns the Guard's options with every default filled.
func (g *Guard) Options() Options { return g.opts }

// Owner is the lease owner this Guard writes into PROCESSING records.
func (g *Guard) Owner() string { return g.opts.Owner }

// Store is the ledger the Guard records in.
func (g *Guard) Store() ledger.Store { return g.store }

// Request is one guarded tools/call in the core's terms.
type Request struct {
	Tool string
	// Meta is the request's params._meta (the key, the fence, traceparent).
	Meta map[string]any
	// Arguments are the request's arguments as sent (nil or null: none).
	Arguments json.RawMessage
	// ArgumentsErr, when set, says the adapter could not read the
	// arguments; the call is refused with -32602 and nothing is stored.
	ArgumentsErr error
	// Session is the MCP session's id; ProtocolVersion the negotiated
	// version; Peer what telemetry says of the transport.
	Session         string
	ProtocolVersion string
	Peer            telemetry.Peer
	// Check, when set, checks the decoded arguments once the key is read
	// (the tool's input schema, where the SDK does not check it before the
	// guard); an error refuses the call with -32602.
	Check func(args map[string]any) error
	// Tenant names the call's tenant from the authenticated request (nil:
	// DefaultTenant). Its error goes back to the client as it is, and
	// nothing is stored.
	Tenant func(ctx context.Context) (string, error)
}

// Answer is how a guarded call is answered: exactly one of its fields is
// set.
type Answer struct {
	// Reply is the handler's own reply (End.Reply), sent as it is.
	Reply any
	// Replay is the record whose stored result answers the call, with
	// the replay marker (wire.Marker; wire.Missing when it has none).
	Replay *ledger.Record
	// Err is the error to answer with: a *Refusal, which the adapter sends
	// as its SDK's JSON-RPC error, or any other error, sent as it is (the
	// handler's own protocol error, the tenant function's, ctx's, a ledger
	// failure).
	Err error
}

// Call guards one tool call: it reads the key, the fence and the tenant,
// claims the operation, runs the handler through run when it wins the
// claim (at most once per key, under a renewed lease, with the key and
// fence in ctx for KeyFromContext), judges how it ended, and answers every
// repeat from the record. run returns how the handler ended; a panic in
// run is recovered and leaves the record UNKNOWN.
func (g *Guard) Call(ctx context.Context, req *Request, run func(ctx context.Context) End) Answer {
	ctx, tc := g.tel.Start(telemetry.Extract(ctx, req.Meta), req.Tool)
	tc.SetSession(req.Session, req.ProtocolVersion)
	tc.SetPeer(req.Peer)
	c, err := g.prepare(ctx, req)
	var (
		a Answer
		o outcome
	)
	if err != nil {
		a, o = Answer{Err: err}, refused(err)
	} else {
		a, o = g.claim(ctx, c, run, true)
	}
	r := o.result()
	if c != nil {
		r.Tenant, r.Key = c.id.Tenant, c.id.Key
	}
	tc.End(ctx, r)
	return a
}

// claim claims the operation through the lifecycle: the winner executes
// the handler under a renewed lease, every duplicate follows the stored
// record and is answered by the table's action for it. A record the table
// sends to reconciliation is first put to the tool's reconciler, when
// reconcile says so and it has one; the call then claims again and is
// answered from the resolved record: its replay, a run of the handler
// (not run), or -31003 (still UNKNOWN).
func (g *Guard) claim(ctx context.Context, c *call, run func(context.Context) End, reconcile bool) (Answer, outcome) {
	if r := g.fences.Check(c.id, c.fence); r != nil {
		return Answer{Err: r}, outcome{of: ledger.OutcomeInProgress, duplicate: true}
	}
	var (
		ans Answer
		out outcome
	)
	rec, ran, err := g.lc.Do(ctx, c.claim, func(ctx context.Context, _ ledger.Lease) ledger.Report {
		var rep ledger.Report
		rep, ans = g.execute(ctx, c, run)
		out = executed(rep)
		return rep
	})
	if ran {
		if err != nil {
			g.opts.Logger.ErrorContext(ctx, "mcpledger server: storing outcome failed; lease expiry will make the record UNKNOWN",
				"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "err", err)
		}
		return ans, out
	}
	if reconcile && err == nil && rec != nil && ledger.Act(rec) == ledger.ActReconcile {
		if _, ok := g.resolve(ctx, rec, c.args); ok {
			return g.claim(ctx, c, run, false)
		}
	}
	return g.repeat(ctx, c, rec, err)
}

// repeat answers a request that did not run the tool from what the
// lifecycle returned for it: the record's replay, or a refusal.
func (g *Guard) repeat(ctx context.Context, c *call, rec *ledger.Record, err error) (Answer, outcome) {
	if err := Repeat(ctx, c.id, rec, err, g.opts.RetryAfter); err != nil {
		g.log(ctx, "refused: "+err.Error(), c, rec)
		return Answer{Err: err}, repeated(rec, err)
	}
	g.log(ctx, "replay", c, rec)
	return Answer{Replay: rec}, outcome{of: ledger.OutcomeReplayed, duplicate: true, state: rec.State}
}

func (g *Guard) log(ctx context.Context, msg string, c *call, rec *ledger.Record) {
	args := []any{"tool", c.id.Tool, "tenant", c.id.Tenant, "key", ledger.ShortHash(c.id.Key)}
	if rec != nil {
		args = append(args, "state", rec.State)
	}
	g.opts.Logger.DebugContext(ctx, "mcpledger server: "+msg, args...)
}

// Close writes the call events still queued and stops their background
// writer. The store is the caller's to close, after the Guard.
func (g *Guard) Close(ctx context.Context) error {
	if err := g.tel.Close(ctx); err != nil {
		return fmt.Errorf("guard: write call events: %w", err)
	}
	return nil
}

// Replay is the replay of rec as the JSON of a CallToolResult with the
// replay marker in its _meta (wire.Mark), or, for a record that settled
// without a result, one text content saying why, isError. An adapter
// decodes it into its SDK's result.
func Replay(rec *ledger.Record) (json.RawMessage, error) {
	if text, ok := wire.Missing(rec); ok {
		return json.Marshal(struct {
			Meta    map[string]any `json:"_meta"`
			Content []textContent  `json:"content"`
			IsError bool           `json:"isError"`
		}{map[string]any{wire.MetaReplay: wire.Marker(rec)}, []textContent{{"text", text}}, true})
	}
	return wire.Mark(rec)
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/wire"
)

// Outcome is a completed call and how it was answered.
type Outcome[R comparable] struct {
	// Result is the tool's result; for a replay, the first execution's
	// result with the replay marker in its _meta.
	Result R
	Key    string
	// Replayed reports that the result came from the ledger, not from a new
	// execution.
	Replayed bool
	Record   *ledger.Record
	// Attempts is the number of requests this call sent (0 for a replay).
	Attempts int
	// Decision is the re-planning guard's verdict when it was consulted.
	Decision planner.Decision
}

// operation is one call on its way through the ledger.
type operation[P any] struct {
	req      Request[P]
	tool     *Tool // nil when the server does not list it
	name     string
	args     json.RawMessage
	fp       string
	redacted json.RawMessage
	id       ledger.ID
	fence    wire.Fence // of the lease the current run holds
	settings ledger.ToolSettings
	decision planner.Decision
	probed   bool // a probe answered for this call's UNKNOWN record
	via      any  // the Attempt.Via of the last request sent
	// resent: the run re-sends an UNKNOWN call (ledger.ResentOf).
	resent *ledger.Resent
}

// Call runs one tool call through the ledger. A tool error is a result
// the Codec reports IsError for, not a Go error; a Go error means the call
// did not complete, and is a *Error (with the key, the state and the
// model's text) once the call has a key. Each call is one span and one
// count in the metrics of package telemetry.
func (c *Caller[P, R]) Call(ctx context.Context, req Request[P]) (*Outcome[R], error) {
	ctx, tc := c.tel.StartLogged(ctx, req.Tool, c.log)
	o, err := c.call(ctx, req)
	tc.End(ctx, c.result(tc, o, err))
	return o, err
}

// call is Call without its telemetry.
func (c *Caller[P, R]) call(ctx context.Context, req Request[P]) (*Outcome[R], error) {
	if req.Tool == "" {
		return nil, errors.New("caller: a tool call needs a tool name")
	}
	raw, err := MarshalArgs(req.Arguments)
	if err != nil {
		return nil, err
	}
	if len(raw) > c.opts.MaxArguments {
		return nil, fmt.Errorf("%w: %d bytes for tool %s; the limit is %d", ErrArgumentsTooLarge, len(raw), req.Tool, c.opts.MaxArguments)
	}
	tool, err := c.conn.Tool(ctx, req.Tool)
	if err != nil {
		// The call itself will meet the same failure and classify it; the
		// tool list only refines the behaviour.
		c.log.Debug("tool list unavailable", "tool", req.Tool, "err", err)
	}
	op := &operation[P]{req: req, tool: tool, name: req.Tool, args: raw, settings: c.opts.Tools.For(req.Tool)}
	if c.readOnly(op) {
		return c.passthrough(ctx, op)
	}
	if op.fp, err = args.Fingerprint(raw, op.settings.Exclude...); err != nil {
		return nil, err
	}
	op.id = ledger.ID{Tenant: c.opts.Tenant, Layer: c.opts.Layer, Tool: req.Tool}
	if err := ledger.ValidateTenant(op.id.Tenant); err != nil {
		return nil, err
	}
	if ctx, err = argKey(ctx, op); err != nil {
		return nil, err
	}
	switch key, chosen, err := Choose(ctx, req.Tool, op.fp); {
	case err != nil:
		return nil, err
	case chosen:
		op.id.Key = key
	default:
		return c.replanned(ctx, op)
	}
	return c.keyed(ctx, op)
}

// argKey is ctx with the key the caller put in the idempotency_key
// argument of a tool whose input schema declares it: a key is a key
// wherever the caller puts it, and the ledger never replaces it with one
// of its own. A key ctx carries already (WithKey, or _meta through an
// adapter) must be the same one (wire.ErrKeysDiffer).
func argKey[P any](ctx context.Context, op *operation[P]) (context.Context, error) {
	if op.tool == nil || !op.tool.DeclaresKey {
		return ctx, nil
	}
	v, ok, err := wire.KeyArg(op.args)
	if err != nil {
		return nil, fmt.Errorf("caller: the arguments of %s: %w", op.name, err)
	}
	if !ok {
		return ctx, nil
	}
	meta := map[string]any{}
	if k, ok := Key(ctx); ok {
		meta[wire.MetaKey] = k
	}
	key, err := KeyOf(meta, map[string]any{wire.ArgKey: v})
	if err != nil {
		return nil, fmt.Errorf("caller: the key of this call to %s: %w", op.name, err)
	}
	return WithKey(ctx, key), nil
}

// keyed runs op once its key is known.
func (c *Caller[P, R]) keyed(ctx context.Context, op *operation[P]) (*Outcome[R], error) {
	if o, err, ok := c.fastReplay(ctx, op); ok {
		return o, err
	}
	return c.shared(ctx, op)
}

// replanned finds op's key with the re-planning guard: an earlier call of
// the session with the same tool and arguments, else a fresh key. The
// guard reads before the claim writes, so identical calls that arrive at
// once in this process share one guard decision and one execution: the
// first asks the guard and runs, the others wait and get its outcome as a
// replay, instead of each finding no earlier call and running under a key
// of its own.
func (c *Caller[P, R]) replanned(ctx context.Context, op *operation[P]) (*Outcome[R], error) {
	fk := "plan\x00" + op.id.Tenant + "\x00" + op.id.Layer + "\x00" + c.opts.Session + "\x00" + op.id.Tool + "\x00" + op.fp
	o, err, gaveUp := c.flights.do(ctx, fk, c.share, func() (*Outcome[R], error) {
		return c.plan(ctx, op)
	})
	if gaveUp {
		return nil, &Error{Tool: op.name, Err: err,
			Text: fmt.Sprintf("The same call to %s is still running; ask ledger_status before calling again.", op.name)}
	}
	return o, err
}

// plan is replanned for the first of identical calls.
func (c *Caller[P, R]) plan(ctx context.Context, op *operation[P]) (*Outcome[R], error) {
	v, err := c.guard.Check(ctx, planner.Query{
		Tenant: c.opts.Tenant, Layer: c.opts.Layer, Session: c.opts.Session, Tool: op.name, Fingerprint: op.fp,
	})
	if err != nil {
		return nil, fmt.Errorf("caller: re-planning guard: %w", err)
	}
	op.decision = v.Decision
	switch {
	case v.Record != nil && v.Decision != planner.Run:
		c.log.Info("re-planned call matched", "tool", op.name, "key", ledger.ShortHash(v.Record.Key), "decision", v.Decision)
		op.id.Key = v.Record.Key
		o, err, again := c.settle(ctx, op, v.Record)
		if !again {
			return o, err
		}
		// It ended with nothing run: claim it again, under its key.
	case v.Record != nil:
		op.id.Key = v.Record.Key // nothing ran (RETRYABLE, REJECTED): take the key over
	default:
		op.id.Key = Fresh()
	}
	return c.keyed(ctx, op)
}

// fastReplay answers a repeat of an operation this process saw finish
// from memory. Everything else goes to the claim, which returns the
// existing record to a caller that loses it: a read first would only add a
// round trip to every new operation.
func (c *Caller[P, R]) fastReplay(ctx context.Context, op *operation[P]) (*Outcome[R], error, bool) {
	rec, ok := c.finals.get(op.id, c.opts.Now())
	if !ok {
		return nil, nil, false
	}
	if rec.Fingerprint != op.fp {
		return nil, c.fail(op, rec, fmt.Errorf("%w: key %s", ledger.ErrKeyReused, op.id.Key)), true
	}
	o, err, _ := c.settle(ctx, op, rec) // a final record is never reclaimed
	return o, err, true
}

// shared runs op once per (tenant, layer, tool, key) in this process;
// concurrent callers of the same key wait for and share that one execution.
func (c *Caller[P, R]) shared(ctx context.Context, op *operation[P]) (*Outcome[R], error) {
	fk := op.id.Tenant + "\x00" + op.id.Layer + "\x00" + op.id.Tool + "\x00" + op.id.Key
	o, err, gaveUp := c.flights.do(ctx, fk, c.share, func() (*Outcome[R], error) {
		return c.execute(ctx, op)
	})
	if gaveUp {
		return nil, &Error{Tool: op.name, Key: op.id.Key, Err: err,
			Text: fmt.Sprintf("The call to %s (key %s) is still running; ask ledger_status with this key before calling again.", op.name, op.id.Key)}
	}
	return o, err
}

// share copies o for a caller that shares it. A waiter did not run the
// call: it is answered as any repeat of a finished call is, a replay with
// the marker and no attempts of its own.
func (c *Caller[P, R]) share(o *Outcome[R], waiter bool) (*Outcome[R], error) {
	cp, err := c.clone(o)
	if err != nil || !waiter {
		return cp, err
	}
	var zero R
	if cp.Result != zero && cp.Record != nil && cp.Record.State.Final() && !cp.Replayed {
		c.codec.Mark(cp.Result, Marker(cp.Record))
		cp.Replayed, cp.Attempts = true, 0
	}
	return cp, nil
}

// clone copies o, down to the result.
func (c *Caller[P, R]) clone(o *Outcome[R]) (*Outcome[R], error) {
	cp := *o
	var zero R
	if o.Result == zero {
		return &cp, nil
	}
	if r, ok := c.codec.Copy(o.Result); ok {
		cp.Result = r
		return &cp, nil
	}
	raw, err := c.codec.Encode(o.Result)
	if err != nil {
		return nil, fmt.Errorf("caller: copy result: %w", err)
	}
	if cp.Result, err = c.codec.Decode(raw); err != nil {
		return nil, fmt.Errorf("caller: copy result: %w", err)
	}
	return &cp, nil
}

// readOnly reports whether op's tool bypasses the ledger: read-only by
// configuration, or by a trusted server's annotations.
func (c *Caller[P, R]) readOnly(op *operation[P]) bool {
	if op.settings.ReadOnly {
		return true
	}
	return c.trusted() && op.tool != nil && op.tool.Hints != nil && isTrue(op.tool.Hints.ReadOnly)
}

// idempotent reports whether an ambiguous failure of op may be sent again:
// idempotent by configuration, or by a trusted server's annotations.
func (c *Caller[P, R]) idempotent(op *operation[P]) bool {
	if op.settings.Idempotent {
		return true
	}
	return c.trusted() && op.tool != nil && op.tool.Hints != nil && isTrue(op.tool.Hints.Idempotent)
}

func isTrue(b *bool) bool { return b != nil && *b }

// trusted reports whether the server's annotations count: TrustedServer,
// or the policy's trusted servers name it (the same list that lets its
// annotations allow a call without asking).
func (c *Caller[P, R]) trusted() bool {
	return c.opts.TrustedServer || c.opts.Policy.Trusts(c.serverName())
}

// redact returns the arguments as stored and shown to a person, with
// secret-looking values replaced. Only claims and prompts need them, so a
// replay never pays for it.
func (op *operation[P]) redact() (json.RawMessage, error) {
	if op.redacted == nil {
		r, err := op.settings.Redact.JSON(op.args)
		if err != nil {
			return nil, err
		}
		op.redacted = r
	}
	return op.redacted, nil
}

// wireKey is id's key as the server sees it: as it is for a server that
// keeps keys per tenant, else made distinct per tenant (wire.TenantKey), so
// two tenants of this ledger never share a server-side record.
func wireKey(s Server, id ledger.ID) string {
	if s.TenantAware {
		return id.Key
	}
	return wire.TenantKey(id.Tenant, id.Key)
}

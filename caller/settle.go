package caller

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

// settle answers a caller whose operation already has a record, by the
// table's action for it: a bounded wait for one in flight, a replay of a
// finished call, the denial, or an error that says what happened. It never
// executes; again reports that the record is reclaimable and the caller
// should claim it.
func (c *Caller[P, R]) settle(ctx context.Context, op *operation[P], rec *ledger.Record) (o *Outcome[R], err error, again bool) {
	if o, again, ok, err := c.queued(ctx, op, rec); ok {
		return o, err, again
	}
	if ledger.RowOf(rec.State).Waits == ledger.WaitsPerson && !rec.Tombstone {
		if _, ok := confirmerFrom(ctx); ok {
			// This request brings its own confirmer (a host answering an
			// elicitation asked earlier): settle the approval here.
			o, err := c.resolvePending(ctx, op, rec)
			return o, err, false
		}
	}
	if ledger.Act(rec) == ledger.ActWait {
		telemetry.CallFrom(ctx).InProgressWait(ctx)
		latest, err := c.lc.Follow(ctx, rec)
		rec = latest
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.fail(op, rec, ctx.Err()), false
			}
			if errors.Is(err, ledger.ErrInProgress) {
				return nil, c.fail(op, rec, ledger.ErrInProgress), false
			}
			return nil, fmt.Errorf("caller: wait for %s: %w", rec.Tool, err), false
		}
	}
	switch ledger.Act(rec) {
	case ledger.ActReplay:
		o, err := c.replay(op, rec)
		return o, err, false
	case ledger.ActDenied:
		return nil, c.fail(op, rec, ErrDenied), false
	case ledger.ActReclaim:
		return nil, nil, true
	case ledger.ActReconcile:
		if c.canResend(op, rec) {
			o, err := c.resend(ctx, op, rec)
			return o, err, false
		}
		if pr := c.probeFor(op, rec); pr != nil {
			return c.reconcileByProbe(ctx, op, rec, pr)
		}
		if rec.Tombstone {
			return nil, c.fail(op, rec, fmt.Errorf("%w: the record of this key expired under the verify policy; a person must decide", ErrOutcomeUnknown)), false
		}
		return nil, c.fail(op, rec, ErrOutcomeUnknown), false
	}
	return nil, c.fail(op, rec, ledger.ErrInProgress), false
}

// replay answers with the first execution's result plus the replay marker.
func (c *Caller[P, R]) replay(op *operation[P], rec *ledger.Record) (*Outcome[R], error) {
	if len(rec.Result) == 0 {
		// A record finished without a result (reconciled by a person
		// without one): say so rather than replay an empty success.
		return nil, c.fail(op, rec, fmt.Errorf("caller: %s ended as %s without a stored result (%s): %s", rec.Tool, rec.State, rec.ErrorKind, rec.ErrorMessage))
	}
	res, err := c.Replay(rec)
	if err != nil {
		return nil, err
	}
	c.log.Info("replayed", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "state", rec.State)
	return &Outcome[R]{Result: res, Key: rec.Key, Replayed: true, Record: rec, Decision: op.decision}, nil
}

// Replay decodes a finished record's result, as the SDK's client would
// have, with the replay marker added to its _meta. Apart from that one
// _meta entry the result encodes to the stored JSON. The decoded result
// of a finished record this process keeps is remembered: later replays
// copy it instead of decoding.
func (c *Caller[P, R]) Replay(rec *ledger.Record) (R, error) {
	if t, ok := template[R](c.finals, rec); ok {
		if cp, ok := c.codec.Copy(t); ok {
			c.codec.Mark(cp, Marker(rec))
			return cp, nil
		}
	}
	res, err := c.codec.Decode(rec.Result)
	if err != nil {
		var zero R
		return zero, fmt.Errorf("caller: stored result of %s is not a tool result: %w", rec.Tool, err)
	}
	if t, ok := c.codec.Copy(res); ok {
		c.finals.setTemplate(rec, t)
	}
	c.codec.Mark(res, Marker(rec))
	return res, nil
}

// fail builds the caller's error for op, with the model-facing text.
func (c *Caller[P, R]) fail(op *operation[P], rec *ledger.Record, err error) error {
	e := &Error{Tool: op.name, Key: op.id.Key, Err: err}
	if rec != nil {
		e.Key, e.State = rec.Key, rec.State
	}
	e.Text = Explain(op.name, e.Key, rec, err)
	return e
}

// resolvePending asks the request's confirmer about a record waiting for
// approval and, on approval, runs the call. The record's lease is taken
// over first (its fence guards the answer), so exactly one caller acts on
// it; the record's own owner may be waiting for the host's answer.
func (c *Caller[P, R]) resolvePending(ctx context.Context, op *operation[P], rec *ledger.Record) (*Outcome[R], error) {
	if op.fp != "" && rec.Fingerprint != op.fp {
		return nil, c.fail(op, rec, ledger.ErrKeyReused)
	}
	verdict := c.opts.Policy.Decide(c.confirmTool(op.name, op.tool))
	if verdict == confirm.Allow {
		verdict = confirm.Ask
	}
	op.id = rec.ID
	approved, err := c.approve(ctx, op, rec, verdict)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && errors.Is(e.Err, ledger.ErrLeaseLost) {
			return c.settleID(ctx, op) // another caller answered first
		}
		return nil, err
	}
	return c.run(ctx, op, approved)
}

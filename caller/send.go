package caller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// run sends op, which the caller holds in PROCESSING, until it completes
// or the retry rules give up, and records the outcome through the
// lifecycle: the lease is renewed while the call runs, and its fence goes
// out with every attempt.
func (c *Caller[P, R]) run(ctx context.Context, op *operation[P], rec *ledger.Record) (*Outcome[R], error) {
	var (
		res       R
		raw       json.RawMessage
		attempts  int
		sendErr   error
		maybeSent bool
		encErr    error
	)
	if c.opts.Durability != ledger.Durable {
		ctx = ledger.WithDurability(ctx, c.opts.Durability)
	}
	after, rep, err := c.lc.Execute(ctx, rec, func(ctx context.Context, l ledger.Lease) ledger.Report {
		op.fence = wire.Fence{Token: l.Fence, Scope: l.Scope}
		res, raw, attempts, sendErr, maybeSent = c.send(ctx, op, true)
		var rep ledger.Report
		rep, encErr = c.report(op, res, raw, attempts, sendErr, maybeSent)
		rep.Resent = op.resent
		return rep
	})
	telemetry.CallFrom(ctx).SetAttempts(attempts)
	if encErr != nil {
		// The server answered, but this ledger cannot keep the answer: the
		// record says UNKNOWN, and so does the caller.
		return nil, c.fail(op, unknownNow(rec, "unstorable"), fmt.Errorf("%w: %w", ErrOutcomeUnknown, encErr))
	}
	if errors.Is(err, ledger.ErrStale) && sendErr == nil {
		// A newer owner took the key over while this call ran: its answer
		// is the server's, but the ledger keeps the newer owner's outcome.
		c.log.Warn("result not recorded: the key was taken over", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "err", err)
		return &Outcome[R]{Result: res, Key: op.id.Key, Record: rec, Attempts: attempts, Decision: op.decision}, nil
	}
	if err != nil && (sendErr == nil || maybeSent) {
		// The request may have reached the tool and this ledger could not
		// record what came back: only the tool's own answer, recorded, is
		// final, so the outcome is unknown. The record keeps its lease,
		// which no one renews now, and becomes UNKNOWN when it ends.
		c.log.Error("record call outcome", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "on", rep.On, "err", err)
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, "ledger_write_failed")
		return nil, c.fail(op, unknownNow(rec, "ledger_write_failed"), fmt.Errorf(
			"%w: the request was sent and the ledger could not record what came back (%w); check at the server, then reconcile the key (agentctl ledger reconcile %s --as succeeded|failed|not_run)",
			ErrOutcomeUnknown, err, op.id.Key))
	}
	if err != nil {
		c.log.Error("record call failure", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "err", err)
		after = rec
	}
	if sendErr == nil && (rep.On == ledger.OnSucceeded || rep.On == ledger.OnFailed) {
		putResult(c.finals, after, res, c.codec)
		return &Outcome[R]{Result: res, Key: op.id.Key, Record: after, Attempts: attempts, Decision: op.decision}, nil
	}
	if sendErr == nil {
		// The upstream is a ledger (a proxy) that answered with its
		// record's state instead of the tool's result.
		sendErr = c.upstreamSaid(res)
	}
	to, _ := ledger.Next(ledger.StateProcessing, rep.On)
	if ledger.RowOf(to).Act == ledger.ActReconcile {
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, rep.ErrorKind)
		c.sends.note(op.id, op.fence.Token, op.via)
	}
	c.log.Warn("call failed", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "state", to, "attempts", attempts, "err", sendErr)
	if upKey := upstreamAwaits(sendErr); upKey != "" {
		return nil, c.awaitingUpstream(op, after, upKey)
	}
	return nil, c.fail(op, after, Failed(rep, sendErr))
}

// unknownNow is rec as the caller must see it once its outcome is lost:
// UNKNOWN (the ledger will say so when the lease ends).
func unknownNow(rec *ledger.Record, kind string) *ledger.Record {
	cp := *rec
	cp.State, cp.ErrorKind = ledger.StateUnknown, kind
	return &cp
}

// report says what one run of op means for the ledger: the server's
// result (SUCCEEDED, or FAILED for isError), or by the error's class a
// refusal before the tool ran (REJECTED), a request that never left
// (RETRYABLE) or an ambiguous end (UNKNOWN).
func (c *Caller[P, R]) report(op *operation[P], res R, raw json.RawMessage, attempts int, sendErr error, maybeSent bool) (ledger.Report, error) {
	if sendErr != nil {
		return retry.Failure(sendErr, maybeSent, attempts), nil
	}
	raw, compacted, err := c.encode(op, res, raw)
	if err != nil {
		// Not storable: what the server did is known only to this caller,
		// so the record must not claim to know it.
		return ledger.Report{On: ledger.OnAmbiguous, Attempts: attempts, ErrorKind: "unstorable", ErrorMessage: err.Error()}, err
	}
	if !c.codec.IsError(res) {
		return ledger.Report{On: ledger.OnSucceeded, Result: raw, Compacted: compacted, Attempts: attempts}, nil
	}
	if st, ok := c.upstreamState(res); ok {
		// An upstream ledger (agentctl proxy) answered with its record's
		// state: that state, not "the tool said no", is what this record
		// becomes.
		if up, _ := ledger.Upstream(st); up != ledger.OnFailed && up != ledger.OnSucceeded {
			return ledger.Report{On: up, Result: raw, Compacted: compacted, Attempts: attempts,
				ErrorKind: ledger.UpstreamKind(st), ErrorMessage: ledger.OneLine(c.codec.Text(res), 500)}, nil
		}
	}
	return ledger.Report{On: ledger.OnFailed, Result: raw, Compacted: compacted, Attempts: attempts}, nil
}

// encode is the result as stored: the bytes the server sent, or the SDK's
// own encoding of it, compacted past the size limit by the tool's
// compaction.
func (c *Caller[P, R]) encode(op *operation[P], res R, raw json.RawMessage) (json.RawMessage, bool, error) {
	if len(raw) == 0 {
		var err error
		if raw, err = c.codec.Encode(res); err != nil {
			return nil, false, fmt.Errorf("caller: encode result of %s: %w", op.name, err)
		}
	}
	raw, compacted, err := Stored(raw, c.opts.MaxResult, op.settings.Compact)
	if err != nil {
		return nil, false, fmt.Errorf("caller: compact result of %s: %w", op.name, err)
	}
	return raw, compacted, nil
}

// send makes attempts under the retry policy with the same key. It reports
// the result (and its bytes, when the SDK kept them) or the last error, the
// number of requests sent, and whether any of them may have reached the
// tool.
func (c *Caller[P, R]) send(ctx context.Context, op *operation[P], keyed bool) (res R, raw json.RawMessage, attempts int, err error, maybeSent bool) {
	err = retry.Do(ctx, c.opts.Retry, func(ctx context.Context, _ int) error {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.opts.AttemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.opts.AttemptTimeout)
		}
		a := c.attempt(op, keyed)
		r, b, callErr := c.conn.Send(actx, a)
		cancel()
		op.via = a.Via
		if a.Via != nil {
			attempts++ // a connection was there to send on
		}
		if callErr == nil {
			res, raw, maybeSent = r, b, true
			return nil
		}
		sent, again := retry.After(ctx, callErr, c.idempotent(op) || c.conn.Server().KeyAware || !keyed)
		maybeSent = maybeSent || sent
		if !again || upstreamAwaits(callErr) != "" {
			// A call that waits for a person upstream is not retried
			// now: the wait is a person's, not a server's.
			return retry.Stop(callErr)
		}
		c.conn.Repair(ctx, a, callErr)
		return callErr
	})
	return res, raw, attempts, err, maybeSent
}

// attempt is the request of one attempt of op: keyed, with the key as the
// server must see it and the fence of the lease held.
func (c *Caller[P, R]) attempt(op *operation[P], keyed bool) *Attempt[P] {
	a := &Attempt[P]{Params: op.req.Params, Tool: op.name, Args: op.args, Keyed: keyed}
	if keyed {
		a.Key = wireKey(c.conn.Server(), op.id)
		a.Fence = op.fence
		a.KeyArg = (op.tool != nil && op.tool.DeclaresKey) || CarriesKeyArg(op.args)
	}
	return a
}

// WithKeyArg returns the argument object args with idempotency_key set to
// key. Keys are [A-Za-z0-9._:~-] (ledger.ValidateKey), so the key is
// spliced in as it is; arguments that may already name the field are
// decoded instead.
func WithKeyArg(args json.RawMessage, key string) any {
	if bytes.Contains(args, []byte(`"`+wire.ArgKey+`"`)) || bytes.IndexByte(args, '\\') >= 0 {
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil || m == nil {
			m = map[string]any{} // MarshalArgs already proved args is an object
		}
		m[wire.ArgKey] = key
		return m
	}
	body := bytes.TrimSpace(args[1:]) // after '{'
	out := make([]byte, 0, len(args)+len(wire.ArgKey)+len(key)+8)
	out = append(out, `{"`+wire.ArgKey+`":"`...)
	out = append(out, key...)
	out = append(out, '"')
	if len(body) > 0 && body[0] != '}' {
		out = append(out, ',')
	}
	out = append(out, body...)
	return json.RawMessage(out)
}

// passthrough calls a read-only tool without the ledger. Reads are safe to
// repeat, so ambiguous failures are retried too.
func (c *Caller[P, R]) passthrough(ctx context.Context, op *operation[P]) (*Outcome[R], error) {
	telemetry.CallFrom(ctx).Bypass()
	res, _, attempts, err, _ := c.send(ctx, op, false)
	if err != nil {
		return nil, err
	}
	return &Outcome[R]{Result: res, Attempts: attempts}, nil
}

// Continued records res, the final answer to a continuation of the
// operation key of tool (a multi-round-trip call the adapter sent itself,
// under the operation's key), as the outcome of its record.
func (c *Caller[P, R]) Continued(ctx context.Context, tool, key string, res R, raw json.RawMessage) (*Outcome[R], error) {
	id := ledger.ID{Tenant: c.opts.Tenant, Layer: c.opts.Layer, Tool: tool, Key: key}
	rec, err := c.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("caller: the operation of this continuation: %w", err)
	}
	op := &operation[P]{name: tool, id: id, settings: c.opts.Tools.For(tool)}
	rep, err := c.report(op, res, raw, 1, nil, true)
	if err != nil {
		return nil, err
	}
	after, err := c.lc.Settle(ctx, ledger.LeaseOf(rec), rec.State, rep)
	if err != nil {
		return nil, fmt.Errorf("caller: record result of %s (key %s): %w", tool, key, err)
	}
	putResult(c.finals, after, res, c.codec)
	return &Outcome[R]{Result: res, Key: key, Record: after, Attempts: 1}, nil
}

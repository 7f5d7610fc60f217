package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/op"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// settle answers a caller whose operation already has a record, by the
// table's action for it: a bounded wait for one in flight, a replay of a
// finished call, the denial, or an error that says what happened. It never
// executes; again reports that the record is reclaimable and the caller
// should claim it.
func (c *Client) settle(ctx context.Context, op *operation, rec *ledger.Record) (o *Outcome, err error, again bool) {
	if o, err, again, ok := c.queued(ctx, op, rec); ok {
		return o, err, again
	}
	if rec.State == ledger.StatePendingApproval && !rec.Tombstone {
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
			return nil, fmt.Errorf("client: wait for %s: %w", rec.Tool, err), false
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
		if rec.Tombstone {
			return nil, c.fail(op, rec, fmt.Errorf("%w: the record of this key expired under the verify policy; a person must decide", ErrOutcomeUnknown)), false
		}
		return nil, c.fail(op, rec, ErrOutcomeUnknown), false
	}
	return nil, c.fail(op, rec, ledger.ErrInProgress), false
}

// ReplayMarker is the value of _meta["io.github.mcpledger/replay"] on a
// replayed result.
type ReplayMarker = wire.Replay

// replay answers with the first execution's result plus the replay marker.
func (c *Client) replay(op *operation, rec *ledger.Record) (*Outcome, error) {
	if len(rec.Result) == 0 {
		// A record finished without a result (reconciled by a person
		// without one): say so rather than replay an empty success.
		return nil, c.fail(op, rec, fmt.Errorf("client: %s ended as %s without a stored result (%s): %s", rec.Tool, rec.State, rec.ErrorKind, rec.ErrorMessage))
	}
	res, err := c.replayResult(rec)
	if err != nil {
		return nil, err
	}
	c.log.Info("replayed", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "state", rec.State)
	return &Outcome{Result: res, Key: rec.Key, Replayed: true, Record: rec, Decision: op.decision}, nil
}

// Replay decodes a finished record's result and adds the replay marker to
// its _meta. Apart from that one _meta entry the result marshals to the
// stored JSON.
func Replay(rec *ledger.Record) (*mcp.CallToolResult, error) {
	res, err := decodeResult(rec)
	if err != nil {
		return nil, err
	}
	mark(res, rec)
	return res, nil
}

// replayResult is Replay with the decoded result remembered for finished
// records this process keeps: later replays copy it instead of decoding.
func (c *Client) replayResult(rec *ledger.Record) (*mcp.CallToolResult, error) {
	if t := c.finals.template(rec); t != nil {
		if cp, ok := copyResult(t); ok {
			mark(cp, rec)
			return cp, nil
		}
	}
	res, err := decodeResult(rec)
	if err != nil {
		return nil, err
	}
	if t, ok := copyResult(res); ok {
		c.finals.setTemplate(rec, t)
	}
	mark(res, rec)
	return res, nil
}

func decodeResult(rec *ledger.Record) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	// Straight to go-sdk's decoder: json.Unmarshal would first scan the
	// stored bytes, which the store wrote from a valid result.
	if err := res.UnmarshalJSON(rec.Result); err != nil {
		return nil, fmt.Errorf("client: stored result of %s is not a CallToolResult: %w", rec.Tool, err)
	}
	return res, nil
}

// mark adds the replay marker to a fresh _meta map of res.
func mark(res *mcp.CallToolResult, rec *ledger.Record) {
	meta := mcp.Meta{}
	for k, v := range res.Meta {
		meta[k] = v
	}
	meta[wire.MetaReplay] = wire.Replay{
		Key: rec.Key, State: rec.State, FirstAt: rec.CreatedAt.UTC(), Attempts: rec.Attempts, Compacted: rec.Compacted,
	}
	res.Meta = meta
}

// fail builds the caller's error for op, with the model-facing text.
func (c *Client) fail(op *operation, rec *ledger.Record, err error) error {
	e := &Error{Tool: op.name, Key: op.id.Key, Err: err}
	if rec != nil {
		e.Key, e.State = rec.Key, rec.State
	}
	e.Text = explain(op.name, e.Key, rec, err)
	return e
}

// explain is the model-facing text of a call that did not complete
// (op.Explain, shared with the mcp-go wrapper).
var explain = op.Explain

// resolvePending asks the request's confirmer about a record waiting for
// approval and, on approval, runs the call. The record's lease is taken
// over first (its fence guards the answer), so exactly one caller acts on
// it; the record's own owner may be waiting for the host's answer.
func (c *Client) resolvePending(ctx context.Context, op *operation, rec *ledger.Record) (*Outcome, error) {
	if op.fp != "" && rec.Fingerprint != op.fp {
		return nil, c.fail(op, rec, ledger.ErrKeyReused)
	}
	s := c.Session()
	verdict := c.opts.Policy.Decide(confirm.Tool{Name: op.name, Server: c.serverName(s), Annotations: annotations(op)})
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

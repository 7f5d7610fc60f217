package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/telemetry"
)

// settle answers a caller whose operation already has a record: a replay of
// a finished call, a bounded wait for one in flight, or an error that says
// what happened. It never executes.
func (c *Client) settle(ctx context.Context, op *operation, rec *ledger.Record) (*Outcome, error) {
	if rec.Tombstone {
		return nil, c.fail(op, rec, fmt.Errorf("%w: the record of this key expired under the verify policy; a person must decide", ErrOutcomeUnknown))
	}
	if rec.State == ledger.StatePendingApproval {
		if _, ok := confirmerFrom(ctx); ok {
			// This request brings its own confirmer (a host answering an
			// elicitation asked earlier): settle the approval here.
			return c.resolvePending(ctx, op, rec)
		}
	}
	if rec.State.Waiting() {
		telemetry.CallFrom(ctx).InProgressWait(ctx)
		latest, err := c.await(ctx, rec)
		rec = latest
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.fail(op, rec, ctx.Err())
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("client: wait for %s: %w", rec.Tool, err)
			}
			return nil, c.fail(op, rec, ledger.ErrInProgress)
		}
	}
	switch rec.State {
	case ledger.StateSucceeded, ledger.StateFailed:
		return c.replay(op, rec)
	case ledger.StateUnknown:
		if c.canResend(op, rec) {
			return c.resend(ctx, op, rec)
		}
		return nil, c.fail(op, rec, ErrOutcomeUnknown)
	case ledger.StateDenied:
		return nil, c.fail(op, rec, ErrDenied)
	case ledger.StateRetryable:
		return nil, c.fail(op, rec, ErrNotSent)
	}
	return nil, c.fail(op, rec, ledger.ErrInProgress)
}

// ReplayMarker is the value of _meta["io.github.mcpledger/replay"] on a
// replayed result.
type ReplayMarker struct {
	Key      string       `json:"key"`
	State    ledger.State `json:"state"`
	FirstAt  time.Time    `json:"firstAt"`
	Attempts int          `json:"attempts"`
	// Compacted: the stored result was compacted past the size limit.
	Compacted bool `json:"compacted,omitempty"`
}

// replay answers with the first execution's result plus the replay marker.
func (c *Client) replay(op *operation, rec *ledger.Record) (*Outcome, error) {
	if len(rec.Result) == 0 {
		// A deterministic rejection (a protocol error, key reused at the
		// server): replay the same error.
		return nil, c.fail(op, rec, fmt.Errorf("client: %s rejected the call earlier (%s): %s", rec.Tool, rec.ErrorKind, rec.ErrorMessage))
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
	meta[MetaReplay] = ReplayMarker{
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

func explain(tool, key string, rec *ledger.Record, err error) string {
	if rec != nil {
		d := planner.Replay
		switch {
		case errors.Is(err, ledger.ErrKeyReused):
			return fmt.Sprintf("The key %s was already used for %s with different arguments, so this call was not run. Do not re-issue it; use a new operation if a second effect is really wanted.", key, tool)
		case rec.State.Waiting():
			d = planner.InFlight
		case rec.State == ledger.StateUnknown || rec.Tombstone:
			d = planner.Unknown
		case rec.State == ledger.StateDenied:
			d = planner.Denied
		}
		return planner.Explain(planner.Verdict{Decision: d, Record: rec})
	}
	return fmt.Sprintf("The call to %s (key %s) did not complete: %v. Ask ledger_status with this key before calling again.", tool, key, err)
}

// resolvePending asks the request's confirmer about a record waiting for
// approval and, on approval, runs the call. The compare-and-set from
// PENDING_APPROVAL lets exactly one caller act on the answer.
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
	if errors.Is(err, errSettledElsewhere) {
		return c.settleID(ctx, op)
	}
	if err != nil {
		return nil, err
	}
	return c.run(ctx, op, approved)
}

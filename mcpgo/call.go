package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	lclient "github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/op"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// Outcome is a completed call and how it was answered.
type Outcome struct {
	// Result is the tool's result; for a replay, the first execution's
	// result with the replay marker in its _meta.
	Result *mcp.CallToolResult
	Key    string
	// Replayed: the result came from the ledger, not a new execution.
	Replayed bool
	Record   *ledger.Record
	// Attempts is the number of requests this call sent (0 for a replay).
	Attempts int
	// Decision is the re-planning guard's verdict when it was consulted.
	Decision planner.Decision
}

// call is one tool call on its way through the ledger.
type call struct {
	req      mcp.CallToolRequest
	name     string
	args     json.RawMessage
	tool     *mcp.Tool // nil when the server does not list it
	settings ledger.ToolSettings
	id       ledger.ID
	fp       string
	decision planner.Decision
}

// CallTool calls a tool through the ledger, with the signature and meaning
// of mcp-go's (*client.Client).CallTool: a tool error is a result with
// IsError set, not a Go error. req is not modified.
func (c *Client) CallTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	o, err := c.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	return o.Result, nil
}

// Call is CallTool with how the call was answered.
func (c *Client) Call(ctx context.Context, req mcp.CallToolRequest) (*Outcome, error) {
	name := req.Params.Name
	if name == "" {
		return nil, errors.New("mcpgo: CallTool needs a tool name")
	}
	args, err := op.MarshalArgs(req.Params.Arguments)
	if err != nil {
		return nil, err
	}
	if len(args) > c.opts.MaxArguments {
		return nil, fmt.Errorf("%w: %d bytes for tool %s; the limit is %d", ErrArgumentsTooLarge, len(args), name, c.opts.MaxArguments)
	}
	k := &call{req: req, name: name, args: args, tool: c.tool(ctx, name), settings: c.opts.Tools.For(name)}
	if c.readOnly(k) {
		res, _, attempts, err, _ := c.send(ctx, k, wire.Fence{}, false)
		if err != nil {
			return nil, err
		}
		return &Outcome{Result: res, Attempts: attempts}, nil
	}
	if k.fp, err = ledger.Fingerprint(args, k.settings.Exclude...); err != nil {
		return nil, err
	}
	k.id = ledger.ID{Tenant: c.opts.Tenant, Layer: c.opts.Layer, Tool: name}
	if err := ledger.ValidateTenant(k.id.Tenant); err != nil {
		return nil, err
	}
	key, chosen, err := op.Choose(ctx, name, k.fp)
	if err != nil {
		return nil, err
	}
	k.id.Key = key
	if !chosen {
		v, err := c.guard.Check(ctx, planner.Query{Tenant: c.opts.Tenant, Layer: c.opts.Layer, Session: c.opts.Session, Tool: name, Fingerprint: k.fp})
		if err != nil {
			return nil, fmt.Errorf("mcpgo: re-planning guard: %w", err)
		}
		k.decision = v.Decision
		switch {
		case v.Record != nil && v.Decision != planner.New:
			c.log.Info("re-planned call matched", "tool", name, "key", ledger.ShortHash(v.Record.Key), "decision", v.Decision)
			k.id.Key = v.Record.Key
			rec, err := c.lc.Follow(ctx, v.Record)
			if err != nil || ledger.Act(rec) != ledger.ActReclaim {
				return c.answer(ctx, k, rec, err)
			}
			// It ended with nothing run: claim it again, under its key.
		case v.Record != nil:
			k.id.Key = v.Record.Key // nothing ran (RETRYABLE, REJECTED): take the key over
		default:
			k.id.Key = op.Fresh()
		}
	}
	return c.claim(ctx, k)
}

// claim runs k through the lifecycle: the winner sends it under a renewed,
// fenced lease; every other caller follows the record and is answered by
// the table's action for it.
func (c *Client) claim(ctx context.Context, k *call) (*Outcome, error) {
	red, err := k.settings.Redact.Redact(k.args)
	if err != nil {
		return nil, err
	}
	retention := k.settings.Retention
	if retention <= 0 {
		retention = c.opts.Retention
	}
	verdict := c.opts.Policy.Decide(confirm.Tool{Name: k.name, Server: c.opts.Server, Annotations: hints(k.tool).Annotations()})
	req := ledger.ClaimRequest{
		ID: k.id, Session: c.opts.Session, Fingerprint: k.fp, Arguments: red,
		Retention: retention, ReusePolicy: k.settings.Reuse, NeedsApproval: verdict != confirm.Allow,
	}
	var (
		s   sending
		rec *ledger.Record
		ran bool
	)
	if verdict == confirm.Allow {
		rec, ran, err = c.lc.Do(ctx, req, c.exec(k, &s))
	} else {
		rec, ran, err = c.approved(ctx, k, req, verdict, red, c.exec(k, &s))
	}
	if !ran {
		return c.answer(ctx, k, rec, err)
	}
	return c.outcome(k, &s, rec, err)
}

// sending is what one run of a call under a lease sent and got.
type sending struct {
	res      *mcp.CallToolResult
	attempts int
	err      error
	rep      ledger.Report
}

// exec sends k under the lease it is given, with the lease's fence, and
// reports the outcome to the lifecycle; s keeps what happened.
func (c *Client) exec(k *call, s *sending) ledger.Exec {
	return func(ctx context.Context, l ledger.Lease) ledger.Report {
		var (
			raw       json.RawMessage
			maybeSent bool
		)
		s.res, raw, s.attempts, s.err, maybeSent = c.send(ctx, k, wire.Fence{Token: l.Fence, Scope: l.Scope}, true)
		if s.err != nil {
			s.rep = retry.Failure(s.err, maybeSent, s.attempts)
		} else {
			s.rep = c.report(k, s.res, raw, s.attempts)
		}
		return s.rep
	}
}

// outcome answers the caller whose run s was recorded as rec (err: the
// recording failed).
func (c *Client) outcome(k *call, s *sending, rec *ledger.Record, err error) (*Outcome, error) {
	if s.err == nil {
		if err != nil {
			// The server answered; the ledger could not keep it (a newer
			// owner took the key over, or the store failed).
			c.log.Warn("result not recorded", "tool", k.name, "key", ledger.ShortHash(k.id.Key), "err", err)
		}
		return &Outcome{Result: s.res, Key: k.id.Key, Record: rec, Attempts: s.attempts, Decision: k.decision}, nil
	}
	if err != nil {
		c.log.Error("record call failure", "tool", k.name, "key", ledger.ShortHash(k.id.Key), "err", err)
	}
	c.log.Warn("call failed", "tool", k.name, "key", ledger.ShortHash(k.id.Key), "on", s.rep.On, "attempts", s.attempts, "err", s.err)
	return nil, c.fail(k, rec, lclient.Failed(s.rep, s.err))
}

// resend takes an UNKNOWN record back to PROCESSING under a fresh lease
// and sends the call again with the same key, to a server that answers a
// repeat with its first outcome (canResend).
func (c *Client) resend(ctx context.Context, k *call, rec *ledger.Record) (*Outcome, error) {
	// A take-over: the store gives the record this owner and the next
	// fence, so the earlier owner, should it wake up, can record nothing.
	again, err := c.lc.Resend(ctx, rec)
	if errors.Is(err, ledger.ErrStateChanged) {
		// Another caller reconciled it first: answer from its record.
		latest, err := c.store.Get(ctx, rec.ID)
		if err != nil {
			return nil, fmt.Errorf("mcpgo: %w", err)
		}
		return c.settled(k, latest)
	}
	if err != nil {
		return nil, fmt.Errorf("mcpgo: reconcile %s: %w", rec.Tool, err)
	}
	c.log.Info("re-sending an UNKNOWN call to a key-aware server", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key))
	var s sending
	after, _, err := c.lc.Execute(ctx, again, c.exec(k, &s))
	return c.outcome(k, &s, after, err)
}

// canResend reports whether an UNKNOWN record of k may be reconciled by
// sending it again (op.Resendable).
func (c *Client) canResend(k *call, rec *ledger.Record) bool {
	mc := c.MCP()
	if mc == nil {
		return false
	}
	v, ok := mc.GetServerCapabilities().Experimental[wire.Capability]
	return op.Resendable(rec, k.fp, ok, v, c.opts.Now())
}

// approved claims req for a call the policy asks about or denies: the
// winner settles the approval (confirm.Settle, as package client does)
// and, approved, runs exec under the lease; every other caller follows the
// record. It reports whether exec ran.
func (c *Client) approved(ctx context.Context, k *call, req ledger.ClaimRequest, verdict confirm.Verdict, args json.RawMessage, exec ledger.Exec) (*ledger.Record, bool, error) {
	var rec *ledger.Record
	for range 3 {
		cl, err := c.lc.Claim(ctx, req)
		if err != nil {
			return cl.Record, false, err
		}
		if !cl.Won {
			if rec, err = c.lc.Follow(ctx, cl.Record); err != nil || ledger.Act(rec) != ledger.ActReclaim {
				return rec, false, err
			}
			continue
		}
		bind := c.opts.Policy.Bound(confirm.Tool{Name: k.name, Server: c.opts.Server, Annotations: hints(k.tool).Annotations()})
		st, err := confirm.Settle(ctx, c.lc, cl.Record, verdict, c.opts.Now, bind, func(ctx context.Context) (confirm.Answer, error) {
			if c.opts.Confirmer == nil {
				return confirm.Answer{}, confirm.ErrNoConfirmer
			}
			return c.opts.Confirmer.Confirm(ctx, confirm.Request{
				Tenant: k.id.Tenant, Session: c.opts.Session, Server: c.opts.Server, Tool: k.name, Key: k.id.Key,
				Arguments: args, Annotations: hints(k.tool).Annotations(),
			})
		})
		if err != nil {
			return cl.Record, false, fmt.Errorf("mcpgo: record the answer for %s: %w", k.name, err)
		}
		switch st.Report.On {
		case ledger.OnDeny:
			c.log.Info("call denied", "tool", k.name, "key", ledger.ShortHash(k.id.Key), "by", st.Report.Approval.By)
			return st.Record, false, nil // answered from the DENIED record
		case ledger.OnNoAnswer:
			c.log.Info("call not confirmed", "tool", k.name, "key", ledger.ShortHash(k.id.Key), "err", st.NoAnswer)
			return st.Record, false, fmt.Errorf("%w: no one confirmed the call: %w", ErrRejected, st.NoAnswer)
		}
		rec, _, err = c.lc.Execute(ctx, st.Record, exec)
		return rec, true, err
	}
	return rec, false, fmt.Errorf("%w: the key went back to %s under this call several times", ledger.ErrInProgress, rec.State)
}

// hints are a tool's annotations for the policy: nil when the server does
// not list the tool or sent no annotations (mcp-go decodes absent
// annotations to the zero value; nothing is known then).
func hints(t *mcp.Tool) *confirm.Hints {
	if t == nil || t.Annotations == (mcp.ToolAnnotation{}) {
		return nil
	}
	a := t.Annotations
	return &confirm.Hints{Title: a.Title, ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}
}

// report is what a server's answer means for the ledger: SUCCEEDED, or
// FAILED for isError, with the result as the server sent it.
func (c *Client) report(k *call, res *mcp.CallToolResult, raw json.RawMessage, attempts int) ledger.Report {
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(res); err != nil {
			// What the server did is known only to this caller: the record
			// must not claim to know it.
			return ledger.Report{On: ledger.OnAmbiguous, Attempts: attempts, ErrorKind: "unstorable", ErrorMessage: err.Error()}
		}
	}
	raw, compacted, err := op.Stored(raw, c.opts.MaxResult, k.settings.Compact)
	if err != nil {
		return ledger.Report{On: ledger.OnAmbiguous, Attempts: attempts, ErrorKind: "unstorable", ErrorMessage: err.Error()}
	}
	on := ledger.OnSucceeded
	if res.IsError {
		on = ledger.OnFailed
	}
	return ledger.Report{On: on, Result: raw, Compacted: compacted, Attempts: attempts}
}

// answer settles a caller that did not send: by the table's action for the
// record it followed, a replay, the denial, a re-send of an UNKNOWN call
// to a key-aware server, or an error that says what happened. The
// lifecycle already claimed again what was reclaimable.
func (c *Client) answer(ctx context.Context, k *call, rec *ledger.Record, err error) (*Outcome, error) {
	switch {
	case errors.Is(err, ledger.ErrKeyReused):
		return nil, c.fail(k, rec, err)
	case errors.Is(err, ledger.ErrInProgress):
		return nil, c.fail(k, rec, ledger.ErrInProgress)
	case err != nil:
		return nil, c.fail(k, rec, err)
	}
	if ledger.Act(rec) == ledger.ActReconcile && c.canResend(k, rec) {
		return c.resend(ctx, k, rec)
	}
	return c.settled(k, rec)
}

// settled answers from rec, without sending.
func (c *Client) settled(k *call, rec *ledger.Record) (*Outcome, error) {
	switch ledger.Act(rec) {
	case ledger.ActReplay:
		return c.replay(k, rec)
	case ledger.ActDenied:
		return nil, c.fail(k, rec, ErrDenied)
	case ledger.ActReconcile:
		if rec.Tombstone {
			return nil, c.fail(k, rec, fmt.Errorf("%w: the record of this key expired under the verify policy; a person must decide", ErrOutcomeUnknown))
		}
		return nil, c.fail(k, rec, ErrOutcomeUnknown)
	}
	return nil, c.fail(k, rec, ledger.ErrInProgress)
}

// replay answers with the first execution's result plus the replay marker.
func (c *Client) replay(k *call, rec *ledger.Record) (*Outcome, error) {
	if len(rec.Result) == 0 {
		return nil, c.fail(k, rec, fmt.Errorf("mcpgo: %s ended as %s without a stored result (%s): %s", rec.Tool, rec.State, rec.ErrorKind, rec.ErrorMessage))
	}
	res, err := Replay(rec)
	if err != nil {
		return nil, err
	}
	c.log.Info("replayed", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "state", rec.State)
	return &Outcome{Result: res, Key: rec.Key, Replayed: true, Record: rec, Decision: k.decision}, nil
}

// Replay decodes a finished record's result, as mcp-go's client would
// have, with the replay marker added to its _meta.
func Replay(rec *ledger.Record) (*mcp.CallToolResult, error) {
	raw, err := op.Mark(rec)
	if err != nil {
		return nil, err
	}
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return nil, fmt.Errorf("mcpgo: stored result of %s is not a CallToolResult: %w", rec.Tool, err)
	}
	return res, nil
}

// fail builds the caller's error for k, with the model-facing text.
func (c *Client) fail(k *call, rec *ledger.Record, err error) error {
	e := &Error{Tool: k.name, Key: k.id.Key, Err: err}
	if rec != nil {
		e.Key, e.State = rec.Key, rec.State
	}
	e.Text = op.Explain(k.name, e.Key, rec, err)
	return e
}

func (c *Client) readOnly(k *call) bool {
	if k.settings.ReadOnly {
		return true
	}
	return c.opts.TrustedServer && k.tool != nil && k.tool.Annotations.ReadOnlyHint != nil && *k.tool.Annotations.ReadOnlyHint
}

func (c *Client) idempotent(k *call) bool {
	if k.settings.Idempotent {
		return true
	}
	return c.opts.TrustedServer && k.tool != nil && k.tool.Annotations.IdempotentHint != nil && *k.tool.Annotations.IdempotentHint
}

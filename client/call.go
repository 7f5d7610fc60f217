package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/op"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/wire"
)

// Outcome is a completed call and how it was answered.
type Outcome struct {
	// Result is the tool's result; for a replay, the first execution's
	// result with the replay marker in its _meta.
	Result *mcp.CallToolResult
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
type operation struct {
	params   *mcp.CallToolParams
	tool     *mcp.Tool // nil when the server does not list it
	name     string
	args     json.RawMessage
	fp       string
	redacted json.RawMessage
	id       ledger.ID
	fence    wire.Fence // of the lease the current run holds
	redactor *ledger.Redactor
	decision planner.Decision
}

// CallTool calls a tool through the ledger. It has the signature and
// meaning of (*mcp.ClientSession).CallTool: a tool error is a result with
// IsError set, not a Go error. p is never modified.
func (c *Client) CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	o, err := c.Call(ctx, p)
	if err != nil {
		return nil, err
	}
	return o.Result, nil
}

// call is Call without its telemetry.
func (c *Client) call(ctx context.Context, p *mcp.CallToolParams) (*Outcome, error) {
	if p == nil || p.Name == "" {
		return nil, errors.New("client: CallTool needs a tool name")
	}
	if p.RequestState != "" || len(p.InputResponses) > 0 {
		return c.continuation(ctx, p)
	}
	args, err := marshalArgs(p.Arguments)
	if err != nil {
		return nil, err
	}
	if len(args) > c.opts.MaxArguments {
		return nil, fmt.Errorf("%w: %d bytes for tool %s; the limit is %d", ErrArgumentsTooLarge, len(args), p.Name, c.opts.MaxArguments)
	}
	tool, err := c.tool(ctx, p.Name)
	if err != nil {
		// The call itself will meet the same failure and classify it; the
		// tool list only refines the behaviour.
		c.log.Debug("tool list unavailable", "tool", p.Name, "err", err)
	}
	op := &operation{params: p, tool: tool, name: p.Name, args: args, redactor: c.opts.Tools.For(p.Name).Redact}
	if c.readOnly(op) {
		return c.passthrough(ctx, op)
	}
	if op.fp, err = ledger.Fingerprint(args, c.opts.Tools.For(p.Name).Exclude...); err != nil {
		return nil, err
	}
	op.id = ledger.ID{Tenant: c.opts.Tenant, Layer: c.opts.Layer, Tool: p.Name}
	if err := ledger.ValidateTenant(op.id.Tenant); err != nil {
		return nil, err
	}
	switch key, chosen, err := chooseKey(ctx, p.Name, op.fp); {
	case err != nil:
		return nil, err
	case chosen:
		op.id.Key = key
	default:
		v, err := c.guard.Check(ctx, planner.Query{
			Tenant: c.opts.Tenant, Layer: c.opts.Layer, Session: c.opts.Session, Tool: p.Name, Fingerprint: op.fp,
		})
		if err != nil {
			return nil, fmt.Errorf("client: re-planning guard: %w", err)
		}
		op.decision = v.Decision
		switch {
		case v.Record != nil && v.Decision != planner.New:
			c.log.Info("re-planned call matched", "tool", p.Name, "key", ledger.ShortHash(v.Record.Key), "decision", v.Decision)
			op.id.Key = v.Record.Key
			o, err, again := c.settle(ctx, op, v.Record)
			if !again {
				return o, err
			}
			// It ended with nothing run: claim it again, under its key.
		case v.Record != nil:
			op.id.Key = v.Record.Key // nothing ran (RETRYABLE, REJECTED): take the key over
		default:
			op.id.Key = newKey()
		}
	}
	if o, err, ok := c.fastReplay(ctx, op); ok {
		return o, err
	}
	return c.shared(ctx, op)
}

// fastReplay answers a repeat of an operation this process saw finish
// from memory. Everything else goes to the claim, which returns the
// existing record to a caller that loses it: a read first would only add a
// round trip to every new operation.
func (c *Client) fastReplay(ctx context.Context, op *operation) (*Outcome, error, bool) {
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

// newKey mints a key for an operation that matches nothing earlier.
var newKey = op.Fresh

// shared runs op once per (tenant, layer, tool, key) in this process; concurrent
// callers of the same key wait for and share that one execution.
func (c *Client) shared(ctx context.Context, op *operation) (*Outcome, error) {
	fk := op.id.Tenant + "\x00" + op.id.Tool + "\x00" + op.id.Key
	o, err, gaveUp := c.flights.do(ctx, fk, func() (*Outcome, error) {
		return c.execute(ctx, op)
	})
	if gaveUp {
		return nil, &Error{Tool: op.name, Key: op.id.Key, Err: err,
			Text: fmt.Sprintf("The call to %s (key %s) is still running; ask ledger_status with this key before calling again.", op.name, op.id.Key)}
	}
	return o, err
}

// clone copies o for a caller that shares it, down to the result.
func (o *Outcome) clone() (*Outcome, error) {
	cp := *o
	if o.Result == nil {
		return &cp, nil
	}
	if r, ok := copyResult(o.Result); ok {
		cp.Result = r
		return &cp, nil
	}
	raw, err := json.Marshal(o.Result)
	if err != nil {
		return nil, fmt.Errorf("client: copy result: %w", err)
	}
	cp.Result = new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, cp.Result); err != nil {
		return nil, fmt.Errorf("client: copy result: %w", err)
	}
	return &cp, nil
}

// marshalArgs returns the arguments as a JSON object (op.MarshalArgs,
// shared with the mcp-go wrapper).
var marshalArgs = op.MarshalArgs

func (c *Client) readOnly(op *operation) bool {
	if c.opts.Tools.For(op.name).ReadOnly {
		return true
	}
	return c.trusted() && op.tool != nil && op.tool.Annotations != nil && op.tool.Annotations.ReadOnlyHint
}

func (c *Client) idempotent(op *operation) bool {
	if c.opts.Tools.For(op.name).Idempotent {
		return true
	}
	return c.trusted() && op.tool != nil && op.tool.Annotations != nil && op.tool.Annotations.IdempotentHint
}

// trusted reports whether the server's annotations count: TrustedServer,
// or the policy's trusted servers name it (the same list that lets its
// annotations allow a call without asking).
func (c *Client) trusted() bool {
	return c.opts.TrustedServer || c.opts.Policy.Trusts(c.serverName(c.Session()))
}

func annotations(op *operation) *mcp.ToolAnnotations {
	if op.tool == nil {
		return nil
	}
	return op.tool.Annotations
}

// redact returns the arguments as stored and shown to a person, with
// secret-looking values replaced. Only claims and prompts need them, so a
// replay never pays for it.
func (op *operation) redact() (json.RawMessage, error) {
	if op.redacted == nil {
		r, err := op.redactor.Redact(op.args)
		if err != nil {
			return nil, err
		}
		op.redacted = r
	}
	return op.redacted, nil
}

package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	mcpop "github.com/mcpledger/mcpledger/op"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// run sends op, which the caller holds in PROCESSING, until it completes
// or the retry rules give up, and records the outcome through the
// lifecycle: the lease is renewed while the call runs, and its fence goes
// out with every attempt.
func (c *Client) run(ctx context.Context, op *operation, rec *ledger.Record) (*Outcome, error) {
	var (
		res       *mcp.CallToolResult
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
		res, attempts, sendErr, maybeSent = c.send(ctx, op, true)
		var rep ledger.Report
		rep, encErr = c.report(op, res, attempts, sendErr, maybeSent)
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
		return &Outcome{Result: res, Key: op.id.Key, Record: rec, Attempts: attempts, Decision: op.decision}, nil
	}
	if err != nil && (sendErr == nil || maybeSent) {
		// The request may have reached the tool and this ledger could not
		// record what came back: only the tool's own answer, recorded, is
		// final, so the outcome is unknown. The record keeps its lease,
		// which no one renews now, and becomes UNKNOWN when it ends.
		c.log.Error("record call outcome", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "on", rep.On, "err", err)
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, "ledger_write_failed")
		return nil, c.fail(op, unknownNow(rec, "ledger_write_failed"), fmt.Errorf(
			"%w: the request was sent and the ledger could not record what came back (%w); check at the server, then reconcile the key (agentctl ledger reconcile %s --as succeeded|failed)",
			ErrOutcomeUnknown, err, op.id.Key))
	}
	if err != nil {
		c.log.Error("record call failure", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "err", err)
		after = rec
	}
	if sendErr == nil && (rep.On == ledger.OnSucceeded || rep.On == ledger.OnFailed) {
		c.finals.putResult(after, res)
		return &Outcome{Result: res, Key: op.id.Key, Record: after, Attempts: attempts, Decision: op.decision}, nil
	}
	if sendErr == nil {
		// The upstream is a ledger (a proxy) that answered with its
		// record's state instead of the tool's result.
		sendErr = upstreamSaid(res)
	}
	to, _ := ledger.Next(ledger.StateProcessing, rep.On)
	if to == ledger.StateUnknown {
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, rep.ErrorKind)
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
func (c *Client) report(op *operation, res *mcp.CallToolResult, attempts int, sendErr error, maybeSent bool) (ledger.Report, error) {
	if sendErr == nil {
		raw, compacted, err := c.encode(op, res)
		if err != nil {
			// Not storable: what the server did is known only to this
			// caller, so the record must not claim to know it.
			return ledger.Report{On: ledger.OnAmbiguous, Attempts: attempts, ErrorKind: "unstorable", ErrorMessage: err.Error()}, err
		}
		on := ledger.OnSucceeded
		if res.IsError {
			on = ledger.OnFailed
			if st, ok := upstreamState(res); ok {
				// An upstream ledger (agentctl proxy) answered with its
				// record's state: that state, not "the tool said no", is
				// what this record becomes.
				if up, _ := ledger.Upstream(st); up != ledger.OnFailed && up != ledger.OnSucceeded {
					return ledger.Report{On: up, Result: raw, Compacted: compacted, Attempts: attempts,
						ErrorKind: "upstream_" + strings.ToLower(string(st)), ErrorMessage: ledger.OneLine(resultText(res), 500)}, nil
				}
			}
		}
		return ledger.Report{On: on, Result: raw, Compacted: compacted, Attempts: attempts}, nil
	}
	return retry.Failure(sendErr, maybeSent, attempts), nil
}

// encode is the result as stored: go-sdk's own encoding of it, compacted
// past the size limit by the tool's compaction.
func (c *Client) encode(op *operation, res *mcp.CallToolResult) (json.RawMessage, bool, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, false, fmt.Errorf("client: encode result of %s: %w", op.name, err)
	}
	if len(raw) <= c.opts.MaxResult {
		return raw, false, nil
	}
	compact := c.opts.Tools.For(op.name).Compact
	if compact == nil {
		compact = ledger.Compact
	}
	raw, compacted, err := compact(raw, c.opts.MaxResult)
	if err != nil {
		return nil, false, fmt.Errorf("client: compact result of %s: %w", op.name, err)
	}
	return raw, compacted, nil
}

// send makes attempts under the retry policy with the same key. It reports
// the result or the last error, the number of requests sent, and whether
// any of them may have reached the tool.
func (c *Client) send(ctx context.Context, op *operation, keyed bool) (res *mcp.CallToolResult, attempts int, err error, maybeSent bool) {
	err = retry.Do(ctx, c.opts.Retry, func(ctx context.Context, _ int) error {
		s := c.Session()
		if s == nil {
			var cerr error
			if s, cerr = c.reconnect(ctx, nil); cerr != nil {
				return cerr // never sent: a connect failure
			}
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.opts.AttemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.opts.AttemptTimeout)
		}
		attempts++
		telemetry.CallFrom(ctx).SetSession(sessionOf(s))
		p := c.params(s, op, keyed)
		telemetry.Inject(ctx, p.Meta)
		r, callErr := s.CallTool(actx, p)
		cancel()
		if callErr == nil {
			res, maybeSent = r, true
			return nil
		}
		sent, again := retry.After(ctx, callErr, c.idempotent(op) || keyAware(s) || !keyed)
		maybeSent = maybeSent || sent
		if !again || upstreamAwaits(callErr) != "" {
			// A call that waits for a person upstream is not retried
			// now: the wait is a person's, not a server's.
			return retry.Stop(callErr)
		}
		c.replaceDead(ctx, s, callErr)
		return callErr
	})
	return res, attempts, err, maybeSent
}

// replaceDead reconnects when err shows the session is gone.
func (c *Client) replaceDead(ctx context.Context, s *mcp.ClientSession, err error) {
	if c.connect == nil || !deadSession(err) {
		return
	}
	if _, rerr := c.reconnect(ctx, s); rerr != nil {
		c.log.Warn("reconnect failed", "err", rerr)
	}
}

// deadSession reports whether err shows the session's connection is gone:
// closed or at EOF, a write into a closed pipe (in-memory transports) or a
// broken pipe (a stdio server that exited before the client read its EOF).
func deadSession(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

// params builds fresh params and a fresh _meta for one attempt: go-sdk
// writes protocol fields into the map it is given. The arguments go out as
// the JSON they were fingerprinted from, decoded only to add the key
// argument when the tool declares one.
func (c *Client) params(s *mcp.ClientSession, op *operation, keyed bool) *mcp.CallToolParams {
	meta := make(mcp.Meta, len(op.params.Meta)+1)
	for k, v := range op.params.Meta {
		meta[k] = v
	}
	var args any = op.args
	if keyed {
		key := wireKey(s, op.id)
		meta[wire.MetaKey] = key
		if op.fence.Token > 0 {
			meta[wire.MetaFence] = op.fence.Token
			meta[wire.MetaFenceScope] = op.fence.Scope
		}
		if c.declaresKeyArg(op.tool) || mcpop.CarriesKeyArg(op.args) {
			args = withKeyArg(op.args, key)
		}
	}
	return &mcp.CallToolParams{Meta: meta, Name: op.name, Arguments: args}
}

// withKeyArg returns the argument object with idempotency_key set to key.
// Keys are [A-Za-z0-9._:~-] (ledger.ValidateKey), so the key is spliced in
// as it is; arguments that may already name the field are decoded instead.
func withKeyArg(args json.RawMessage, key string) any {
	if bytes.Contains(args, []byte(`"`+wire.ArgKey+`"`)) || bytes.IndexByte(args, '\\') >= 0 {
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil || m == nil {
			m = map[string]any{} // marshalArgs already proved args is an object
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

// declaresKeyArg reports whether the tool's input schema has an
// idempotency_key property, once per tool definition (a refreshed tool list
// brings new *mcp.Tool values).
func (c *Client) declaresKeyArg(t *mcp.Tool) bool {
	if t == nil {
		return false
	}
	if v, ok := c.keyArg.Load(t); ok {
		return v.(bool)
	}
	v := schemaDeclaresKey(t)
	c.keyArg.Store(t, v)
	return v
}

func schemaDeclaresKey(t *mcp.Tool) bool {
	if t == nil || t.InputSchema == nil {
		return false
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return false
	}
	_, ok := s.Properties[wire.ArgKey]
	return ok
}

// passthrough calls a read-only tool without the ledger. Reads are safe to
// repeat, so ambiguous failures are retried too.
func (c *Client) passthrough(ctx context.Context, op *operation) (*Outcome, error) {
	telemetry.CallFrom(ctx).Bypass()
	res, attempts, err, _ := c.send(ctx, op, false)
	if err != nil {
		return nil, err
	}
	return &Outcome{Result: res, Attempts: attempts}, nil
}

// continuation sends a multi-round-trip continuation (inputResponses,
// requestState). It belongs to the operation already claimed, whose key the
// caller passes with WithKey; it is never a new operation.
func (c *Client) continuation(ctx context.Context, p *mcp.CallToolParams) (*Outcome, error) {
	key, ok := keyFrom(ctx)
	if !ok {
		return nil, errors.New("client: a continuation (requestState or inputResponses) needs the key of its operation: pass it with client.WithKey")
	}
	if err := ledger.ValidateKey(key); err != nil {
		return nil, err
	}
	s := c.Session()
	if s == nil {
		return nil, fmt.Errorf("client: %w", mcp.ErrConnectionClosed)
	}
	meta := mcp.Meta{}
	for k, v := range p.Meta {
		meta[k] = v
	}
	meta[wire.MetaKey] = wireKey(s, ledger.ID{Tenant: c.opts.Tenant, Layer: c.opts.Layer, Tool: p.Name, Key: key})
	telemetry.Inject(ctx, meta)
	cp := &mcp.CallToolParams{Meta: meta, Name: p.Name, Arguments: p.Arguments, InputResponses: p.InputResponses, RequestState: p.RequestState}
	res, err := s.CallTool(ctx, cp)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return &Outcome{Result: res, Key: key, Attempts: 1}, nil
	}
	id := ledger.ID{Tenant: c.opts.Tenant, Layer: c.opts.Layer, Tool: p.Name, Key: key}
	rec, err := c.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("client: the operation of this continuation: %w", err)
	}
	op := &operation{params: p, name: p.Name, id: id}
	rep, err := c.report(op, res, 1, nil, true)
	if err != nil {
		return nil, err
	}
	after, err := c.lc.Settle(ctx, ledger.LeaseOf(rec), rec.State, rep)
	if err != nil {
		return nil, fmt.Errorf("client: record result of %s (key %s): %w", op.name, key, err)
	}
	c.finals.putResult(after, res)
	return &Outcome{Result: res, Key: key, Record: after, Attempts: 1}, nil
}

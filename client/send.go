package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/telemetry"
)

// run sends op, which the caller owns in PROCESSING, until it completes or
// the retry rules give up, and records the outcome.
func (c *Client) run(ctx context.Context, op *operation, rec *ledger.Record) (*Outcome, error) {
	stop := c.keepLease(ctx, op)
	res, attempts, sendErr, maybeSent := c.send(ctx, op, true)
	stop()
	telemetry.CallFrom(ctx).SetAttempts(attempts)

	bg, cancel := c.recordCtx(ctx)
	defer cancel()
	if sendErr == nil {
		return c.complete(bg, op, res, attempts)
	}
	to, kind := ledger.StateUnknown, "ambiguous"
	switch cls := retry.Classify(sendErr); {
	case cls == retry.Permanent:
		to, kind = ledger.StateFailed, permanentKind(sendErr)
	case !maybeSent:
		to, kind = ledger.StateRetryable, "not_sent"
	case cls == retry.Unknown:
		kind = "server_outcome_unknown"
	}
	t := ledger.Transition{
		ID: op.id, From: ledger.StateProcessing, To: to, Owner: c.opts.Owner,
		AddAttempts: attempts, ErrorKind: kind, ErrorMessage: sendErr.Error(),
	}
	after, err := c.store.Transition(bg, t)
	if err != nil {
		c.log.Error("record call failure", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "err", err)
		after = rec
	} else if to == ledger.StateUnknown {
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, kind)
	}
	c.log.Warn("call failed", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "state", to, "attempts", attempts, "err", sendErr)
	switch to {
	case ledger.StateUnknown:
		return nil, c.fail(op, after, fmt.Errorf("%w: %w", ErrOutcomeUnknown, sendErr))
	case ledger.StateRetryable:
		return nil, c.fail(op, after, fmt.Errorf("%w: %w", ErrNotSent, sendErr))
	}
	if retry.Reason(sendErr) == retry.ReasonKeyReused {
		return nil, c.fail(op, after, fmt.Errorf("%w: %w", ledger.ErrKeyReused, sendErr))
	}
	return nil, c.fail(op, after, sendErr)
}

// complete records a result the server returned and hands it to the caller.
func (c *Client) complete(ctx context.Context, op *operation, res *mcp.CallToolResult, attempts int) (*Outcome, error) {
	raw, err := encodeResult(res)
	if err != nil {
		return nil, fmt.Errorf("client: encode result of %s: %w", op.name, err)
	}
	compacted := false
	if len(raw) > c.opts.MaxResult {
		if raw, compacted, err = ledger.Compact(raw, c.opts.MaxResult); err != nil {
			return nil, fmt.Errorf("client: compact result of %s: %w", op.name, err)
		}
	}
	to := ledger.StateSucceeded
	if res.IsError {
		to = ledger.StateFailed
	}
	t := ledger.Transition{
		ID: op.id, From: ledger.StateProcessing, To: to, Owner: c.opts.Owner,
		Result: raw, Compacted: compacted, AddAttempts: attempts,
	}
	rec, err := c.store.Transition(ctx, t)
	if errors.Is(err, ledger.ErrLeaseLost) {
		// The lease ran out while the call was in flight and expiry made the
		// record UNKNOWN; this result is exactly what reconciles it.
		t.From, t.Owner = ledger.StateUnknown, ""
		rec, err = c.store.Transition(ctx, t)
	}
	if err != nil {
		return nil, fmt.Errorf("client: record result of %s (key %s): %w", op.name, op.id.Key, err)
	}
	c.finals.put(rec)
	return &Outcome{Result: res, Key: op.id.Key, Record: rec, Attempts: attempts, Decision: op.decision}, nil
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
		p := c.params(op, keyed)
		telemetry.Inject(ctx, p.Meta)
		r, callErr := s.CallTool(actx, p)
		cancel()
		if callErr == nil {
			res, maybeSent = r, true
			return nil
		}
		switch retry.Classify(callErr) {
		case retry.Transient:
			c.replaceDead(ctx, s, callErr)
			return callErr
		case retry.Ambiguous:
			maybeSent = true
			if ctx.Err() != nil || !(c.idempotent(op) || keyAware(s) || !keyed) {
				return retry.Stop(callErr)
			}
			c.replaceDead(ctx, s, callErr)
			return callErr
		case retry.Unknown:
			// The server received the request and cannot tell whether it
			// ran: the record must become UNKNOWN, not RETRYABLE.
			maybeSent = true
		}
		return retry.Stop(callErr)
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
func (c *Client) params(op *operation, keyed bool) *mcp.CallToolParams {
	meta := make(mcp.Meta, len(op.params.Meta)+1)
	for k, v := range op.params.Meta {
		meta[k] = v
	}
	var args any = op.args
	if keyed {
		meta[MetaKey] = op.id.Key
		if c.declaresKeyArg(op.tool) {
			args = withKeyArg(op.args, op.id.Key)
		}
	}
	return &mcp.CallToolParams{Meta: meta, Name: op.name, Arguments: args}
}

// withKeyArg returns the argument object with idempotency_key set to key.
// Keys are [A-Za-z0-9._:~-] (ledger.ValidateKey), so the key is spliced in
// as it is; arguments that may already name the field are decoded instead.
func withKeyArg(args json.RawMessage, key string) any {
	if bytes.Contains(args, []byte(`"`+ArgKey+`"`)) || bytes.IndexByte(args, '\\') >= 0 {
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil || m == nil {
			m = map[string]any{} // marshalArgs already proved args is an object
		}
		m[ArgKey] = key
		return m
	}
	body := bytes.TrimSpace(args[1:]) // after '{'
	out := make([]byte, 0, len(args)+len(ArgKey)+len(key)+8)
	out = append(out, `{"`+ArgKey+`":"`...)
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
	_, ok := s.Properties[ArgKey]
	return ok
}

// keepLease renews the PROCESSING lease every Lease/3 until the returned
// func is called; stop waits for a renewal under way. A timer, not a
// goroutine: most calls end long before the first renewal.
func (c *Client) keepLease(ctx context.Context, op *operation) (stop func()) {
	every := c.opts.Lease / 3
	var (
		mu      sync.Mutex // held by a renewal and by stop
		stopped bool
		t       *time.Timer
	)
	renew := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		bg, cancel := c.recordCtx(ctx)
		err := c.store.Renew(bg, op.id, c.opts.Owner, c.opts.Lease)
		cancel()
		if err != nil {
			c.log.Warn("lease renewal failed", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "err", err)
		}
		t.Reset(every)
	}
	mu.Lock()
	t = time.AfterFunc(every, renew)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
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
	meta[MetaKey] = key
	telemetry.Inject(ctx, meta)
	cp := &mcp.CallToolParams{Meta: meta, Name: p.Name, Arguments: p.Arguments, InputResponses: p.InputResponses, RequestState: p.RequestState}
	res, err := s.CallTool(ctx, cp)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return &Outcome{Result: res, Key: key, Attempts: 1}, nil
	}
	op := &operation{params: p, name: p.Name, id: ledger.ID{Tenant: c.opts.Tenant, Tool: p.Name, Key: key}}
	bg, cancel := c.recordCtx(ctx)
	defer cancel()
	return c.complete(bg, op, res, 1)
}

// permanentKind names a deterministic rejection for the record.
func permanentKind(err error) string {
	if r := retry.Reason(err); r != "" {
		return r
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return fmt.Sprintf("jsonrpc_%d", je.Code)
	}
	return "rejected"
}

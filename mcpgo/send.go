package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"syscall"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpledger/mcpledger/op"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// send makes attempts under the retry policy with the same key and fence.
// It reports the result and its bytes as the server sent them, or the last
// error, the number of requests sent, and whether any of them may have
// reached the tool. Errors are put in the terms package retry classifies
// (go-sdk's), so both SDKs retry by the same rules.
func (c *Client) send(ctx context.Context, k *call, fence wire.Fence, keyed bool) (res *mcp.CallToolResult, raw json.RawMessage, attempts int, err error, maybeSent bool) {
	err = retry.Do(ctx, c.opts.Retry, func(ctx context.Context, _ int) error {
		mc := c.MCP()
		if mc == nil {
			var cerr error
			if mc, cerr = c.reconnect(ctx, nil); cerr != nil {
				return cerr // never sent: a connect failure
			}
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.opts.AttemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.opts.AttemptTimeout)
		}
		attempts++
		s := &sink{}
		r, callErr := mc.CallTool(withSink(actx, s), c.request(mc, k, fence, keyed))
		cancel()
		if callErr == nil {
			res, raw, maybeSent = r, s.result, true
			return nil
		}
		callErr = explicit(callErr, s)
		sent, again := retry.After(ctx, callErr, c.idempotent(k) || keyAware(mc) || !keyed)
		maybeSent = maybeSent || sent
		if !again {
			return retry.Stop(callErr)
		}
		c.replaceDead(ctx, mc, callErr)
		return callErr
	})
	return res, raw, attempts, err, maybeSent
}

// explicit adds to err what mcp-go's client dropped: the JSON-RPC error
// the server answered with, code and data, as go-sdk's error value.
func explicit(err error, s *sink) error {
	if s.rpcErr == nil {
		return err
	}
	je := &jsonrpc.Error{Code: int64(s.rpcErr.Code), Message: s.rpcErr.Message}
	if s.rpcErr.Data != nil {
		if data, merr := json.Marshal(s.rpcErr.Data); merr == nil {
			je.Data = data
		}
	}
	return &answered{rpc: je, mcpgo: err}
}

// answered is a server's JSON-RPC error: the server's message once, with
// both go-sdk's value (package retry reads its code and data) and mcp-go's
// (errors.Is(err, mcp.ErrInvalidParams) still holds) in its chain.
type answered struct {
	rpc   *jsonrpc.Error
	mcpgo error
}

func (a *answered) Error() string   { return a.rpc.Error() }
func (a *answered) Unwrap() []error { return []error{a.rpc, a.mcpgo} }

// request builds fresh params and a fresh _meta for one attempt: mcp-go
// writes protocol fields into the request it is given.
func (c *Client) request(mc *client.Client, k *call, fence wire.Fence, keyed bool) mcp.CallToolRequest {
	fields := map[string]any{}
	var progress mcp.ProgressToken
	if m := k.req.Params.Meta; m != nil {
		for key, v := range m.AdditionalFields {
			fields[key] = v
		}
		progress = m.ProgressToken
	}
	var args any = k.args
	if keyed {
		key := wireKey(mc, k.id)
		fields[wire.MetaKey] = key
		if fence.Token > 0 {
			fields[wire.MetaFence] = fence.Token
			fields[wire.MetaFenceScope] = fence.Scope
		}
		if declaresKeyArg(k.tool) || op.CarriesKeyArg(k.args) {
			args = withKeyArg(k.args, key)
		}
	}
	var req mcp.CallToolRequest
	req.Header = k.req.Header
	req.Params = mcp.CallToolParams{
		Name: k.name, Arguments: args, Task: k.req.Params.Task,
		Meta: &mcp.Meta{ProgressToken: progress, AdditionalFields: fields},
	}
	return req
}

// declaresKeyArg reports whether the tool's input schema has an
// idempotency_key property.
func declaresKeyArg(t *mcp.Tool) bool {
	if t == nil {
		return false
	}
	_, ok := t.InputSchema.Properties[wire.ArgKey]
	return ok
}

// withKeyArg returns the argument object with idempotency_key set to key
// (excluded from the fingerprint, which was taken before).
func withKeyArg(args json.RawMessage, key string) any {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		m = map[string]any{} // op.MarshalArgs already proved args is an object
	}
	m[wire.ArgKey] = key
	return m
}

// replaceDead reconnects when err shows the connection is gone.
func (c *Client) replaceDead(ctx context.Context, mc *client.Client, err error) {
	if c.connect == nil || !deadConnection(err) {
		return
	}
	if _, rerr := c.reconnect(ctx, mc); rerr != nil {
		c.log.Warn("reconnect failed", "err", rerr)
	}
}

// deadConnection reports whether err shows the connection can carry no
// more calls: package retry's rule, plus mcp-go's closed transport and its
// ended HTTP session.
func deadConnection(err error) bool {
	return retry.SessionLost(err) || errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.EPIPE)
}

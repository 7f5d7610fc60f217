package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"syscall"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// conn is the Client as the caller's link to the server: an mcp-go
// client, replaced through the connect function when it dies.
type conn Client

// Send makes one attempt on the current mcp-go client, connecting first
// when there is none. Errors are put in the terms package retry
// classifies (retry.Wrap), so both SDKs retry by the same rules.
func (cn *conn) Send(ctx context.Context, a *caller.Attempt[mcp.CallToolRequest]) (*mcp.CallToolResult, json.RawMessage, error) {
	mc, err := cn.link.Open(ctx)
	if err != nil {
		return nil, nil, err // never sent: a connect failure
	}
	a.Via = mc
	s := &sink{}
	res, err := mc.CallTool(withSink(ctx, s), request(a))
	if err != nil {
		return nil, nil, explicit(err, s)
	}
	return res, s.result, nil
}

// Repair reconnects when err shows the attempt's connection is gone.
func (cn *conn) Repair(ctx context.Context, a *caller.Attempt[mcp.CallToolRequest], err error) {
	cn.link.Repair(ctx, a.Via, err)
}

// Tool returns the server's definition of name, or nil when the server
// does not list it.
func (cn *conn) Tool(ctx context.Context, name string) (*caller.Tool, error) {
	return cn.link.Tool(ctx, name)
}

// Server is what the current client's server advertised.
func (cn *conn) Server() caller.Server {
	mc := (*Client)(cn).MCP()
	if mc == nil {
		return caller.Server{}
	}
	exp := mc.GetServerCapabilities().Experimental
	v, ok := exp[wire.Capability]
	return caller.Server{KeyAware: ok, Capability: v, TenantAware: wire.TenantAware(exp)}
}

// explicit adds to err what mcp-go's client dropped: the JSON-RPC error
// the server answered with, code and data, as a *retry.RPCError. The
// server's message is the error's text once; mcp-go's value stays in the
// chain (errors.Is(err, mcp.ErrInvalidParams) still holds).
func explicit(err error, s *sink) error {
	if s.rpcErr == nil {
		return err
	}
	answer := &retry.RPCError{Code: int64(s.rpcErr.Code), Message: s.rpcErr.Message}
	if s.rpcErr.Data != nil {
		if data, merr := json.Marshal(s.rpcErr.Data); merr == nil {
			answer.Data = data
		}
	}
	return retry.Wrap(&answered{message: answer.Message, mcpgo: err}, answer)
}

// answered is mcp-go's error under the server's own message.
type answered struct {
	message string
	mcpgo   error
}

func (a *answered) Error() string { return a.message }
func (a *answered) Unwrap() error { return a.mcpgo }

// request builds fresh params and a fresh _meta for one attempt: mcp-go
// writes protocol fields into the request it is given.
func request(a *caller.Attempt[mcp.CallToolRequest]) mcp.CallToolRequest {
	fields := map[string]any{}
	var progress mcp.ProgressToken
	if m := a.Params.Params.Meta; m != nil {
		for key, v := range m.AdditionalFields {
			fields[key] = v
		}
		progress = m.ProgressToken
	}
	args := a.Wire(fields)
	var req mcp.CallToolRequest
	req.Header = a.Params.Header
	req.Params = mcp.CallToolParams{
		Name: a.Tool, Arguments: args, Task: a.Params.Params.Task,
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

// deadConnection reports whether err shows the connection can carry no
// more calls: package retry's rule, plus mcp-go's closed transport and its
// ended HTTP session.
func deadConnection(err error) bool {
	return retry.SessionLost(err) || errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.EPIPE)
}

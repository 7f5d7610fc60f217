package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// conn is the Client as the caller's link to the server: a go-sdk session,
// replaced through the connect function when it dies.
type conn Client

// Send makes one attempt on the current session, opening one first when
// there is none.
func (cn *conn) Send(ctx context.Context, a *caller.Attempt[*mcp.CallToolParams]) (*mcp.CallToolResult, json.RawMessage, error) {
	c := (*Client)(cn)
	s, err := c.link.Open(ctx)
	if err != nil {
		return nil, nil, Neutral(err) // never sent: a connect failure
	}
	a.Via = s
	telemetry.CallFrom(ctx).SetSession(sessionOf(s))
	p := params(a)
	telemetry.Inject(ctx, p.Meta)
	res, err := c.send(ctx, s, p)
	return res, nil, Neutral(err)
}

// sentByCaller marks the context of a request a wrapper or a Middleware
// sends for a call it already recorded, so that a Middleware below it on
// the same go-sdk client (or the same one added twice) lets it pass
// instead of recording it again.
type sentByCaller struct{}

// send sends p on s: through the rest of the client's sending chain under
// a Middleware, else with session.CallTool.
func (c *Client) send(ctx context.Context, s *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	ctx = context.WithValue(ctx, sentByCaller{}, true)
	if c.next == nil {
		return s.CallTool(ctx, p)
	}
	if p.Arguments == nil {
		p.Arguments = map[string]any{} // what session.CallTool sends for none
	}
	// The request as session.CallTool builds it, so the middleware below
	// (go-sdk's multi-round-trip handler among them) reads it as its own.
	res, err := c.next(ctx, methodCallTool, &mcp.ClientRequest[mcp.Params]{Session: s, Params: p})
	if err != nil {
		return nil, err
	}
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil {
		// Another middleware below this one answered with something else;
		// the request went out, so what it did is not known.
		return nil, fmt.Errorf("client: the sending chain answered tools/call with %T, not a tool result", res)
	}
	return r, nil
}

// params builds fresh params and a fresh _meta for one attempt: go-sdk
// writes protocol fields into the map it is given. The arguments go out as
// the JSON they were fingerprinted from, decoded only to add the key
// argument when the tool declares one.
func params(a *caller.Attempt[*mcp.CallToolParams]) *mcp.CallToolParams {
	var from mcp.Meta
	if a.Params != nil { // nil for a request the caller makes itself (a probe)
		from = a.Params.Meta
	}
	meta := make(mcp.Meta, len(from)+1)
	for k, v := range from {
		meta[k] = v
	}
	args := a.Wire(meta)
	return &mcp.CallToolParams{Meta: meta, Name: a.Tool, Arguments: args}
}

// Repair reconnects when err shows the attempt's session is gone.
func (cn *conn) Repair(ctx context.Context, a *caller.Attempt[*mcp.CallToolParams], err error) {
	cn.link.Repair(ctx, a.Via, err)
}

// Tool returns the server's definition of name, or nil when the server
// does not list it.
func (cn *conn) Tool(ctx context.Context, name string) (*caller.Tool, error) {
	return cn.link.Tool(ctx, name)
}

// Exited reports whether the server process of the session an attempt
// went out on (via) has exited: the server is a child process
// (Options.ChildProcess) and the session was closed, which for go-sdk's
// CommandTransport waits for the process to exit. A probe then believes
// an absent answer about a call sent on it at once (caller.Exiter).
func (cn *conn) Exited(via any) bool { return cn.link.Exited(via) }

// Server is what the current session's server said at initialize.
func (cn *conn) Server() caller.Server {
	s := (*Client)(cn).Session()
	if s == nil {
		return caller.Server{}
	}
	ir := s.InitializeResult()
	if ir == nil {
		return caller.Server{}
	}
	var out caller.Server
	if ir.ServerInfo != nil {
		out.Name = ir.ServerInfo.Name
	}
	if ir.Capabilities != nil {
		out.Capability, out.KeyAware = ir.Capabilities.Experimental[wire.Capability]
		out.TenantAware = wire.TenantAware(ir.Capabilities.Experimental)
	}
	return out
}

// listTools is the server's tool list on s, every page.
func listTools(ctx context.Context, s *mcp.ClientSession) ([]*caller.Tool, error) {
	var list []*caller.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		list = append(list, toolOf(t))
	}
	return list, nil
}

// toolOf is what the caller needs of a go-sdk tool definition.
func toolOf(t *mcp.Tool) *caller.Tool {
	return &caller.Tool{Name: t.Name, Hints: Hints(t.Annotations), DeclaresKey: schemaDeclaresKey(t)}
}

// Hints are go-sdk's tool annotations as the policy reads them (nil for
// nil: the server sent none). go-sdk's ReadOnlyHint and IdempotentHint are
// plain bools, so a tool that sent annotations says both.
func Hints(a *mcp.ToolAnnotations) *confirm.Hints {
	if a == nil {
		return nil
	}
	ro, idem := a.ReadOnlyHint, a.IdempotentHint
	return &confirm.Hints{Title: a.Title, ReadOnly: &ro, Idempotent: &idem, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
}

// DeclaresKey reports whether t's input schema has an idempotency_key
// property: the client then fills it with the key, and takes a key the
// caller put there as the call's key.
func DeclaresKey(t *mcp.Tool) bool { return schemaDeclaresKey(t) }

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

// deadSession reports whether err shows the session's connection is gone:
// closed or at EOF, a write into a closed pipe (in-memory transports) or a
// broken pipe (a stdio server that exited before the client read its EOF).
func deadSession(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

// sessionOf is what telemetry reports of the session a request went
// through: its id and the negotiated protocol version.
func sessionOf(s *mcp.ClientSession) (id, protocolVersion string) {
	if r := s.InitializeResult(); r != nil {
		protocolVersion = r.ProtocolVersion
	}
	return s.ID(), protocolVersion
}

// wireKey is id's key as the session's server sees it.
func wireKey(s *mcp.ClientSession, id ledger.ID) string {
	if s != nil {
		if ir := s.InitializeResult(); ir != nil && ir.Capabilities != nil && wire.TenantAware(ir.Capabilities.Experimental) {
			return id.Key
		}
	}
	return wire.TenantKey(id.Tenant, id.Key)
}

// codec is how the caller handles go-sdk's tool results.
type codec struct{}

func (codec) Encode(res *mcp.CallToolResult) (json.RawMessage, error) { return json.Marshal(res) }

func (codec) Decode(raw json.RawMessage) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	// Straight to go-sdk's decoder: json.Unmarshal would first scan the
	// stored bytes, which the store wrote from a valid result.
	if err := res.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return res, nil
}

func (codec) Copy(res *mcp.CallToolResult) (*mcp.CallToolResult, bool) { return copyResult(res) }

// Mark adds the replay marker to a fresh _meta map of res.
func (codec) Mark(res *mcp.CallToolResult, m wire.Replay) {
	meta := make(mcp.Meta, len(res.Meta)+1)
	for k, v := range res.Meta {
		meta[k] = v
	}
	meta[wire.MetaReplay] = m
	res.Meta = meta
}

func (codec) IsError(res *mcp.CallToolResult) bool        { return res.IsError }
func (codec) Meta(res *mcp.CallToolResult) map[string]any { return res.Meta }

// Text is the text content of res, joined.
func (codec) Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

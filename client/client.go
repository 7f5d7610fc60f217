package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// The wire names, from their one home in package wire.
const (
	// CapabilityKey is the experimental capability a key-aware server
	// advertises; it makes retrying an ambiguous failure safe.
	CapabilityKey = wire.Capability
	MetaKey       = wire.MetaKey
	MetaReplay    = wire.MetaReplay
	ArgKey        = wire.ArgKey
)

// Outcome is a completed call and how it was answered ([caller.Outcome]
// over go-sdk's result): Result, the tool's result (a replay's carries
// the replay marker in its _meta); Key, the call's key; Replayed, the
// result came from the ledger, not a new execution; Record, the ledger
// record; Attempts, the requests this call sent (0 for a replay); and
// Decision, the re-planning guard's verdict when it was consulted.
type Outcome = caller.Outcome[*mcp.CallToolResult]

// ConnectFunc opens a new session to the same server. The Client calls it to
// replace a dead session before retrying with the same key.
type ConnectFunc func(ctx context.Context) (*mcp.ClientSession, error)

// Client makes tool calls through a ledger: package caller's one
// orchestration, over a go-sdk session. It is safe for concurrent use.
type Client struct {
	c *caller.Caller[*mcp.CallToolParams, *mcp.CallToolResult]
	// link holds the session, replaces it through the connect function
	// when it dies, and caches the server's tool list.
	link caller.Link[*mcp.ClientSession]
	// next, under a Middleware, is the rest of the go-sdk client's sending
	// chain: attempts go through it, since session.CallTool would enter
	// the middleware again. Nil for a wrapper.
	next mcp.MethodHandler
}

// New wraps an open session. A dead session is not replaced; use Dial for that.
func New(session *mcp.ClientSession, store ledger.Store, opts *Options) *Client {
	return newClient(session, nil, nil, store, opts, "client")
}

// newClient makes a Client whose attempts go out on session (nil: the
// first call connects), through next when it is a Middleware's, and
// replaces a dead session through connect when it is not nil.
func newClient(session *mcp.ClientSession, connect ConnectFunc, next mcp.MethodHandler, store ledger.Store, opts *Options, component string) *Client {
	c := &Client{next: next}
	c.c = caller.New(store, opts.core(), (*conn)(c), codec{}, component)
	o := c.c.Options()
	c.link = caller.Link[*mcp.ClientSession]{
		Connect: connect, Close: (*mcp.ClientSession).Close, Dead: deadSession, ListTools: listTools,
		ChildProcess: o.ChildProcess, Now: o.Now, Log: c.c.Log(),
	}
	if session != nil {
		c.link.Use(session)
	}
	return c
}

// Dial opens a session with connect and keeps using connect to replace the
// session when it dies (a stdio server that exited, say), so an interrupted
// call is retried with the same key on a new session.
func Dial(ctx context.Context, connect ConnectFunc, store ledger.Store, opts *Options) (*Client, error) {
	c := newClient(nil, connect, nil, store, opts, "client")
	if _, err := c.link.Open(ctx); err != nil {
		return nil, errors.Join(err, c.c.Close())
	}
	return c, nil
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

// Call is CallTool that also tells how the call was answered. Each call is
// one span (its trace context travels to the server in _meta and its ids
// are stored on the record) and one count in the metrics of package
// telemetry.
//
// A key in p.Meta[MetaKey] (code that speaks to a key-aware server sends
// its own) is the call's key, as WithKey's is; so is one in the
// idempotency_key argument of a tool whose input schema declares it. One
// that breaks the key rules, or differs from the other's or the key
// WithKey put in ctx, is refused before anything is recorded.
//
// Arguments that name a member twice (at any depth), and a key in _meta
// that differs from the idempotency_key argument's, are refused before
// anything is recorded with an error whose chain holds a -32602
// *jsonrpc.Error (invalid params), as a server would answer them, and
// ErrInvalid of ledger/args or caller.ErrKeysDiffer.
func (c *Client) Call(ctx context.Context, p *mcp.CallToolParams) (*Outcome, error) {
	if p == nil || p.Name == "" {
		return nil, errors.New("client: CallTool needs a tool name")
	}
	ctx, err := metaKey(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.RequestState != "" || len(p.InputResponses) > 0 {
		return c.continuation(ctx, p)
	}
	o, err := c.c.Call(ctx, caller.Request[*mcp.CallToolParams]{Tool: p.Name, Arguments: p.Arguments, Params: p})
	if err != nil {
		return nil, malformed(err)
	}
	return o, nil
}

// metaKey is ctx with the key p carries in _meta, if any.
func metaKey(ctx context.Context, p *mcp.CallToolParams) (context.Context, error) {
	if _, ok := p.Meta[wire.MetaKey]; !ok {
		return ctx, nil
	}
	key, err := wire.KeyOf(p.Meta, nil)
	if err != nil {
		return nil, fmt.Errorf("client: the key in params._meta of %s: %w; send 1-255 of [A-Za-z0-9._:~-], or leave it out", p.Name, err)
	}
	if k, ok := caller.Key(ctx); ok && k != key {
		return nil, fmt.Errorf("client: %w: params._meta of %s carries key %q and the context another (client.WithKey); send one of them", ledger.ErrInvalidKey, p.Name, key)
	}
	return caller.WithKey(ctx, key), nil
}

// Session returns the current session.
func (c *Client) Session() *mcp.ClientSession { return c.link.Current() }

// Repeatable runs fn, a request that is safe to send twice (a list, a
// read, a prompt; never a tool call, which goes through CallTool), on the
// current session. When the session turns out to be gone and the client
// has a connect function, it runs fn once more on a new session, which
// later tool calls use too.
func (c *Client) Repeatable(ctx context.Context, fn func(ctx context.Context, s *mcp.ClientSession) error) error {
	return c.link.Repeatable(ctx, fn)
}

// LedgerServer is an MCP server with ledger_status and ledger_list over
// this client's calls: its tenant and session, and its per-tool argument
// exclusions, so that ledger_status asked by arguments finds a call just as
// the re-planning guard does. Mount it in-process over
// mcp.NewInMemoryTransports or serve it to the model's host.
func (c *Client) LedgerServer() *mcp.Server {
	return ledgerServer(c.c.Store(), c.c.Options())
}

// Close closes the current session and writes the call events still
// queued. The store is the caller's to close, after the Client.
func (c *Client) Close() error {
	return errors.Join(c.link.End(), c.c.Close())
}

// ToolListChanged drops the cached tool list. Wire it as
// mcp.ClientOptions.ToolListChangedHandler (through a closure when the
// Client is made after the mcp.Client).
func (c *Client) ToolListChanged(context.Context, *mcp.ToolListChangedRequest) {
	c.link.ToolsChanged(nil)
}

// continuation sends a multi-round-trip continuation (inputResponses,
// requestState). It belongs to the operation already claimed, whose key the
// caller passes with WithKey; it is never a new operation.
func (c *Client) continuation(ctx context.Context, p *mcp.CallToolParams) (*Outcome, error) {
	key, ok := caller.Key(ctx)
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
	o := c.c.Options()
	meta := mcp.Meta{}
	for k, v := range p.Meta {
		meta[k] = v
	}
	meta[wire.MetaKey] = wireKey(s, ledger.ID{Tenant: o.Tenant, Layer: o.Layer, Tool: p.Name, Key: key})
	cp := &mcp.CallToolParams{Meta: meta, Name: p.Name, Arguments: p.Arguments, InputResponses: p.InputResponses, RequestState: p.RequestState}
	res, err := c.send(ctx, s, cp)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return &Outcome{Result: res, Key: key, Attempts: 1}, nil
	}
	return c.c.Continued(ctx, p.Name, key, res, nil)
}

package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner/ledgertools"
)

// methodCallTool is the MCP method of a tool call.
const methodCallTool = "tools/call"

// Middleware protects the sessions a go-sdk client already has: added with
// (*mcp.Client).AddSendingMiddleware, it sends every tools/call of every
// session of that client through the ledger, so code that only knows a
// session (a third-party tool runner calling session.CallTool) is
// protected unchanged:
//
//	mw := client.NewMiddleware(store, &client.Options{Tenant: "acme", Session: "run-42"})
//	defer mw.Close()
//	mc.AddSendingMiddleware(mw.Wrap)
//
// Each call is package caller's one orchestration, as with the wrapper
// (New, Dial), under the same Options: the key from the context (WithKey,
// WithChain, WithNewKey) or from params._meta, else the re-planning guard;
// retries under that key through the rest of the client's sending chain;
// replays marked in _meta; the policy, confirmation and the queue; the
// tenant; the truth rule. Every other request passes untouched.
//
// session.CallTool then answers as go-sdk does for a bare session: a
// *mcp.CallToolResult (a tool error is a result with IsError, a replay
// carries the replay marker), and a call the ledger did not complete is a
// *jsonrpc.Error with the code its state's row names (ledger.RowOf): -31003
// outcome unknown, -31002 in progress, awaiting approval or not run,
// -31001 key reused, -31004 key invalid, each with data.key, data.state
// and the model's text as its message. A denial, and a call no one
// confirmed, are isError results whose _meta[wire.MetaError] names the key
// and state, as their rows say. A failure of the ledger itself (it cannot
// be read) is a Go error, as a transport's would be; a repeat of the call
// goes through the ledger again.
//
// Unlike the wrapper, the middleware does not own the sessions: it does
// not replace a dead one (the runtime reconnects, and its next call with
// the same key finds the ledger's record), and Close leaves them open.
// Unless Options.Session names one, all sessions of a Middleware share one
// ledger session, so a runtime that reconnects keeps its re-planning
// window. A Middleware is safe for concurrent use; the zero value is not
// usable, use NewMiddleware.
type Middleware struct {
	store ledger.Store
	opts  Options

	// mu guards clients and closed.
	mu      sync.Mutex
	clients map[*mcp.ClientSession]*Client
	closed  bool
}

// ErrMiddlewareClosed: a tool call was made through a Middleware after its
// Close. Nothing was sent.
var ErrMiddlewareClosed = errors.New("client: the ledger middleware is closed; nothing was sent (make a new one with client.NewMiddleware)")

// NewMiddleware makes a Middleware that records in store, configured as a
// wrapper is (nil opts means the defaults).
func NewMiddleware(store ledger.Store, opts *Options) *Middleware {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Session == "" {
		o.Session = "s-" + randomHex(8)
	}
	return &Middleware{store: store, opts: o, clients: map[*mcp.ClientSession]*Client{}}
}

// Wrap is the go-sdk sending middleware (an mcp.Middleware): pass it to
// (*mcp.Client).AddSendingMiddleware. It may wrap the handlers of several
// clients.
func (m *Middleware) Wrap(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodCallTool || ctx.Value(sentByCaller{}) != nil {
			return next(ctx, method, req)
		}
		// go-sdk sends a *mcp.ClientRequest[mcp.Params] whose params are
		// a *mcp.CallToolParams.
		s, _ := req.GetSession().(*mcp.ClientSession)
		p, _ := req.GetParams().(*mcp.CallToolParams)
		if s == nil || p == nil {
			return next(ctx, method, req)
		}
		c, err := m.clientFor(s, next)
		if err != nil {
			return nil, err
		}
		o, err := c.Call(ctx, p)
		if err != nil {
			return answer(ctx, p, err)
		}
		return o.Result, nil
	}
}

// clientFor is the caller of session s, made on its first call: one Client
// per session, whose conn sends through next. It is forgotten when the
// session ends.
func (m *Middleware) clientFor(s *mcp.ClientSession, next mcp.MethodHandler) (*Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrMiddlewareClosed
	}
	if c, ok := m.clients[s]; ok {
		return c, nil
	}
	c := newClient(s, nil, next, m.store, &m.opts, "middleware")
	m.clients[s] = c
	go m.forgetWhenDone(s, c)
	return c, nil
}

// forgetWhenDone drops the caller of s once s has ended, after writing its
// queued call events.
func (m *Middleware) forgetWhenDone(s *mcp.ClientSession, c *Client) {
	if err := s.Wait(); err != nil {
		c.c.Log().Debug("session ended", "err", err)
	}
	m.mu.Lock()
	mine := m.clients[s] == c
	if mine {
		delete(m.clients, s)
	}
	m.mu.Unlock()
	if !mine {
		return // Close took it
	}
	if err := c.c.Close(); err != nil {
		c.c.Log().Warn("closing the session's caller", "err", err)
	}
}

// ToolListChanged drops the cached tool list of the request's session.
// Wire it as mcp.ClientOptions.ToolListChangedHandler (through a closure
// when the Middleware is made after the mcp.Client); without it the list
// is read again at most a minute after it was.
func (m *Middleware) ToolListChanged(ctx context.Context, req *mcp.ToolListChangedRequest) {
	if req == nil {
		return
	}
	m.mu.Lock()
	c := m.clients[req.Session]
	m.mu.Unlock()
	if c != nil {
		c.ToolListChanged(ctx, req)
	}
}

// LedgerServer is an MCP server with ledger_status and ledger_list over
// the calls this Middleware records: its tenant, ledger session and layer.
// ConnectLedger serves it to the same runtime.
func (m *Middleware) LedgerServer() *mcp.Server {
	return ledgerServer(m.store, caller.Options(m.opts))
}

// ConnectLedger serves LedgerServer in-process over in-memory transports
// and returns a session on it, so a runtime that takes sessions lists the
// ledger tools beside the real server's: the model asks ledger_status and
// ledger_list as it calls any tool. The session's client has no
// Middleware (asking the ledger is not an operation to record); closing
// the session ends the server side too.
func (m *Middleware) ConnectLedger(ctx context.Context) (*mcp.ClientSession, error) {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := m.LedgerServer().Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("client: serve the ledger tools: %w", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpledger-ledger-tools", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("client: connect to the ledger tools: %w", err), ss.Close())
	}
	return cs, nil
}

// Close writes the call events still queued and refuses later tool calls
// (ErrMiddlewareClosed). The sessions stay open: they are the runtime's;
// the store is the caller's to close, after the Middleware.
func (m *Middleware) Close() error {
	m.mu.Lock()
	m.closed = true
	clients := make([]*Client, 0, len(m.clients))
	for s, c := range m.clients {
		clients = append(clients, c)
		delete(m.clients, s)
	}
	m.mu.Unlock()
	var errs []error
	for _, c := range clients {
		errs = append(errs, c.c.Close())
	}
	return errors.Join(errs...)
}

// ledgerServer is the ledger tools over the calls of callers configured
// with o: its tenant, session and layer, and its per-tool argument
// exclusions, so that ledger_status asked by arguments finds a call just
// as the re-planning guard does.
func ledgerServer(store ledger.Store, o caller.Options) *mcp.Server {
	exclude := map[string][]string{}
	for name, t := range o.Tools {
		if len(t.Exclude) > 0 {
			exclude[name] = t.Exclude
		}
	}
	layer := o.Layer
	if layer == "" {
		layer = ledger.LayerClient
	}
	tenant := o.Tenant
	if tenant == "" {
		tenant = "default"
	}
	return ledgertools.NewServer(store, tenant, o.Session, &ledgertools.Options{Exclude: exclude, Layer: layer})
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("client: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

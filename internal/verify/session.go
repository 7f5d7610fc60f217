package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// hooks watch the tools/call requests of the sessions made with them.
// Faults are one-shot: the first matching request triggers them.
type hooks struct {
	sent atomic.Int64 // tools/call requests written

	// dropNext makes the first tools/call response read be lost: the
	// connection closes instead (the server did answer).
	dropNext atomic.Bool
	// killNext kills the server after the first tools/call request is
	// written.
	killNext atomic.Bool
	kill     func() error

	mu      sync.Mutex // guards killErr
	killErr error
}

type hookTransport struct {
	inner mcp.Transport
	h     *hooks
}

func (t *hookTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &hookConn{Connection: c, h: t.h, calls: map[any]bool{}}, nil
}

type hookConn struct {
	mcp.Connection
	h *hooks

	mu    sync.Mutex // guards calls
	calls map[any]bool
}

func (c *hookConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, isCall := msg.(*jsonrpc.Request)
	isCall = isCall && req.Method == "tools/call" && req.ID.IsValid()
	if isCall {
		c.mu.Lock()
		c.calls[req.ID.Raw()] = true
		c.mu.Unlock()
	}
	err := c.Connection.Write(ctx, msg)
	if isCall && err == nil {
		c.h.sent.Add(1)
		if c.h.killNext.CompareAndSwap(true, false) && c.h.kill != nil {
			kerr := c.h.kill()
			c.h.mu.Lock()
			c.h.killErr = kerr
			c.h.mu.Unlock()
		}
	}
	return err
}

func (c *hookConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return msg, nil
	}
	c.mu.Lock()
	isCall := c.calls[resp.ID.Raw()]
	c.mu.Unlock()
	if isCall && c.h.dropNext.CompareAndSwap(true, false) {
		// The answer arrived and is thrown away, as a network that fails
		// after the server answered would: the call ran, the caller
		// cannot know.
		if cerr := c.Connection.Close(); cerr != nil {
			return nil, fmt.Errorf("verify: closing after the lost response: %w", cerr)
		}
		return nil, io.EOF
	}
	return msg, nil
}

// closeAfterCheck closes a check's session or client. The error is
// dropped: a check's figure comes from the answers and the tool's counters
// before it, and several checks cut or kill the server on purpose.
func closeAfterCheck(c io.Closer) { _ = c.Close() }

// session opens a new MCP session to the server, through h when set.
func (r *runner) session(ctx context.Context, h *hooks) (*mcp.ClientSession, error) {
	tr, err := r.t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	if h != nil {
		if inner := tr; r.t.Kill != nil {
			h.kill = func() error { return r.t.Kill(inner) }
		}
		tr = &hookTransport{inner: tr, h: h}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "agentctl-verify", Version: "v1"}, nil)
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		return nil, fmt.Errorf("verify: connecting to the server: %w", err)
	}
	return cs, nil
}

// clientOptions are the options of every ledger client of the run: the
// scratch tenant and layer, approvals given (the call is the user's own
// choice of tool), short retry waits.
func (r *runner) clientOptions(tenant string) *client.Options {
	return &client.Options{
		Tenant:  tenant,
		Layer:   r.layer,
		Session: "verify-" + r.id,
		Confirmer: confirm.Static{Answer: confirm.Answer{
			Decision: ledger.DecisionApproved, By: "agentctl verify", Reason: "a verify call",
		}},
		Retry:  &retry.Policy{MaxAttempts: 4, InitialInterval: 20 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
		Logger: r.log,
	}
}

// dial makes a ledger client in tenant whose sessions go through h (nil:
// plain sessions); the client reconnects through the same hooks.
func (r *runner) dial(ctx context.Context, tenant string, h *hooks) (*client.Client, error) {
	connect := func(ctx context.Context) (*mcp.ClientSession, error) { return r.session(ctx, h) }
	return client.Dial(ctx, connect, r.t.Store, r.clientOptions(tenant))
}

// call makes one ledger call with key.
func (r *runner) call(ctx context.Context, cl *client.Client, key string, args map[string]any) (*client.Outcome, error) {
	return cl.Call(client.WithKey(ctx, key), &mcp.CallToolParams{Name: r.t.Tool, Arguments: args})
}

// direct sends one tools/call straight to the server, bypassing the
// ledger, with key and (when token > 0) a fence.
func (r *runner) direct(ctx context.Context, cs *mcp.ClientSession, key string, token int64, args map[string]any) (*mcp.CallToolResult, error) {
	meta := mcp.Meta{wire.MetaKey: key}
	if token > 0 {
		meta[wire.MetaFence] = token
		meta[wire.MetaFenceScope] = "verify-" + r.id
	}
	return cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: r.t.Tool, Arguments: args})
}

// replayMarker returns the server's or the ledger's replay marker on res.
func replayMarker(res *mcp.CallToolResult) (wire.Replay, bool) {
	if res == nil || res.Meta == nil {
		return wire.Replay{}, false
	}
	v, ok := res.Meta[wire.MetaReplay]
	if !ok {
		return wire.Replay{}, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return wire.Replay{}, false
	}
	var m wire.Replay
	if err := json.Unmarshal(b, &m); err != nil {
		return wire.Replay{}, false
	}
	return m, true
}

// body is res without its _meta, as JSON: what a replay must repeat byte
// for byte.
func body(res *mcp.CallToolResult) ([]byte, error) {
	if res == nil {
		return nil, errors.New("no result")
	}
	cp := *res
	cp.Meta = nil
	return json.Marshal(&cp)
}

// rpcCode returns the JSON-RPC error code and data.reason of err.
func rpcCode(err error) (int64, string, bool) {
	je, ok := errs.AsType[*jsonrpc.Error](err)
	if !ok {
		return 0, "", false
	}
	var d wire.ErrorData
	if len(je.Data) > 0 {
		if uerr := json.Unmarshal(je.Data, &d); uerr != nil {
			d.Reason = ""
		}
	}
	return je.Code, d.Reason, true
}

// copyArgs returns a shallow copy of the target's arguments.
func (r *runner) copyArgs() map[string]any {
	m := make(map[string]any, len(r.t.Args)+1)
	for k, v := range r.t.Args {
		m[k] = v
	}
	return m
}

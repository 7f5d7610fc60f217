package mcpgo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
)

// ClientOptions configure a Client: caller.Options, the same as package
// client's, so both SDKs' clients take one configuration. The zero value
// (or nil) means the defaults.
type ClientOptions = caller.Options

// ConnectFunc opens a new, initialized mcp-go client to the same server,
// on a transport made with Transport. The Client calls it to replace a
// dead connection before it retries with the same key.
type ConnectFunc func(ctx context.Context) (*client.Client, error)

// Client makes mcp-go tool calls through a ledger: package caller's one
// orchestration over an mcp-go client, with the meaning of package
// client's Client: keys from context (caller.WithKey, caller.WithChain,
// caller.WithNewKey; client.WithKey is the same), the re-planning guard,
// policy, confirmation and the approval queue, session approvals, retries
// by class with the same key and fence, UNKNOWN for an ambiguous failure a
// server that does not honour keys leaves behind, one execution per key in
// the process, replays of the stored result with the replay marker, and
// telemetry. Errors are *caller.Error with caller's sentinels. It is safe
// for concurrent use.
type Client struct {
	c       *caller.Caller[mcp.CallToolRequest, *mcp.CallToolResult]
	connect ConnectFunc

	// mu guards mc, tools and toolsAt.
	mu      sync.Mutex
	mc      *client.Client
	tools   map[string]*caller.Tool // nil: not loaded
	toolsAt time.Time
}

// toolsTTL bounds how stale the cached tool list may get (the list is
// also dropped when the server says it changed).
const toolsTTL = time.Minute

// New wraps an initialized mcp-go client whose transport was made with
// Transport. A dead connection is not replaced; use Dial for that.
func New(mc *client.Client, store ledger.Store, opts *ClientOptions) (*Client, error) {
	if err := wrappedClient(mc); err != nil {
		return nil, err
	}
	c := newClient(store, opts)
	c.use(mc)
	return c, nil
}

// Dial opens a client with connect and keeps using connect to replace it
// when its connection dies, so an interrupted call is retried with the
// same key on a new connection.
func Dial(ctx context.Context, connect ConnectFunc, store ledger.Store, opts *ClientOptions) (*Client, error) {
	mc, err := connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcpgo: connect: %w", err)
	}
	if err := wrappedClient(mc); err != nil {
		return nil, errors.Join(err, mc.Close())
	}
	c := newClient(store, opts)
	c.connect = connect
	c.use(mc)
	return c, nil
}

// use makes mc the current client and drops the cached tool list when its
// server says the list changed. The caller holds mu or owns c alone.
func (c *Client) use(mc *client.Client) {
	c.mc, c.tools = mc, nil
	mc.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			c.mu.Lock()
			if c.mc == mc {
				c.tools = nil
			}
			c.mu.Unlock()
		}
	})
}

func wrappedClient(mc *client.Client) error {
	if mc == nil {
		return errors.New("mcpgo: no mcp-go client given")
	}
	switch mc.GetTransport().(type) {
	case *wrapped, *wrappedHTTP:
		return nil
	}
	return errors.New("mcpgo: the mcp-go client's transport is not wrapped: make it with client.NewClient(mcpgo.Transport(t)) so error codes reach the ledger")
}

func newClient(store ledger.Store, opts *ClientOptions) *Client {
	c := new(Client)
	c.c = caller.New(store, opts, (*conn)(c), codec{}, "mcpgo.client")
	return c
}

// MCP returns the current mcp-go client, for requests that are safe to
// send twice (lists, reads, prompts).
func (c *Client) MCP() *client.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mc
}

// Close closes the current mcp-go client. The store is the caller's to
// close, after the Client.
func (c *Client) Close() error {
	c.mu.Lock()
	mc := c.mc
	c.mc = nil
	c.mu.Unlock()
	err := c.c.Close()
	if mc == nil {
		return err
	}
	return errors.Join(mc.Close(), err)
}

// Tool returns the server's definition of name, or nil when the server
// does not list it.
func (cn *conn) Tool(ctx context.Context, name string) (*caller.Tool, error) {
	c := (*Client)(cn)
	now := c.c.Options().Now()
	c.mu.Lock()
	tools, at, mc := c.tools, c.toolsAt, c.mc
	c.mu.Unlock()
	if tools != nil && now.Sub(at) < toolsTTL {
		if t, ok := tools[name]; ok {
			return t, nil
		}
	}
	if mc == nil {
		return nil, errors.New("mcpgo: the connection is closed")
	}
	res, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("mcpgo: list tools: %w", err)
	}
	fresh := make(map[string]*caller.Tool, len(res.Tools))
	for i := range res.Tools {
		t := &res.Tools[i]
		fresh[t.Name] = &caller.Tool{Name: t.Name, Hints: hints(t), DeclaresKey: declaresKeyArg(t)}
	}
	c.mu.Lock()
	if c.mc == mc {
		c.tools, c.toolsAt = fresh, now
	}
	c.mu.Unlock()
	return fresh[name], nil
}

// reconnect replaces dead when it is still the current client.
func (c *Client) reconnect(ctx context.Context, dead *client.Client) (*client.Client, error) {
	if c.connect == nil {
		return nil, errors.New("mcpgo: the connection is closed and no connect function was given (use mcpgo.Dial)")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mc != dead && c.mc != nil {
		return c.mc, nil
	}
	if dead != nil {
		if err := dead.Close(); err != nil {
			c.c.Log().Debug("close dead client", "err", err)
		}
	}
	mc, err := c.connect(ctx)
	if err == nil {
		err = wrappedClient(mc)
	}
	if err != nil {
		c.mc = nil
		return nil, fmt.Errorf("mcpgo: reconnect: %w", err)
	}
	c.use(mc)
	return mc, nil
}

// ErrNotSent and the other outcomes are package client's, so code that
// handles both SDKs branches once.
var (
	ErrOutcomeUnknown    = caller.ErrOutcomeUnknown
	ErrDenied            = caller.ErrDenied
	ErrRejected          = caller.ErrRejected
	ErrNotSent           = caller.ErrNotSent
	ErrArgumentsTooLarge = caller.ErrArgumentsTooLarge
	ErrAwaitingApproval  = caller.ErrAwaitingApproval
)

// Error is a call that did not complete (caller.Error, as package client's).
type Error = caller.Error

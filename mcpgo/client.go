package mcpgo

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
)

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
	c *caller.Caller[mcp.CallToolRequest, *mcp.CallToolResult]
	// link holds the mcp-go client, replaces it through the connect
	// function when its connection dies, and caches the tool list.
	link caller.Link[*client.Client]
}

// New wraps an initialized mcp-go client whose transport was made with
// Transport. A dead connection is not replaced; use Dial for that.
func New(mc *client.Client, store ledger.Store, opts *ClientOptions) (*Client, error) {
	if err := wrappedClient(mc); err != nil {
		return nil, err
	}
	c := newClient(store, opts, nil)
	c.watch(mc)
	c.link.Use(mc)
	return c, nil
}

// Dial opens a client with connect and keeps using connect to replace it
// when its connection dies, so an interrupted call is retried with the
// same key on a new connection.
func Dial(ctx context.Context, connect ConnectFunc, store ledger.Store, opts *ClientOptions) (*Client, error) {
	c := newClient(store, opts, connect)
	if _, err := c.link.Open(ctx); err != nil {
		return nil, errors.Join(err, c.c.Close())
	}
	return c, nil
}

func newClient(store ledger.Store, opts *ClientOptions, connect ConnectFunc) *Client {
	c := new(Client)
	c.c = caller.New(store, opts.core(), (*conn)(c), codec{}, "mcpgo.client")
	c.link = caller.Link[*client.Client]{
		Close: (*client.Client).Close, Dead: deadConnection, ListTools: listTools,
		Now: c.c.Options().Now, Log: c.c.Log(),
	}
	if connect != nil {
		c.link.Connect = func(ctx context.Context) (*client.Client, error) {
			mc, err := connect(ctx)
			if err != nil {
				return nil, err
			}
			if err := wrappedClient(mc); err != nil {
				return nil, errors.Join(err, mc.Close())
			}
			c.watch(mc)
			return mc, nil
		}
	}
	return c
}

// watch drops the cached tool list when mc's server says the list
// changed while mc is the current client.
func (c *Client) watch(mc *client.Client) {
	mc.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			c.link.ToolsChanged(mc)
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

// MCP returns the current mcp-go client, for requests that are safe to
// send twice (lists, reads, prompts).
func (c *Client) MCP() *client.Client { return c.link.Current() }

// Close closes the current mcp-go client. The store is the caller's to
// close, after the Client.
func (c *Client) Close() error {
	return errors.Join(c.link.End(), c.c.Close())
}

// listTools is the server's tool list on mc.
func listTools(ctx context.Context, mc *client.Client) ([]*caller.Tool, error) {
	res, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	list := make([]*caller.Tool, len(res.Tools))
	for i := range res.Tools {
		t := &res.Tools[i]
		list[i] = &caller.Tool{Name: t.Name, Hints: hints(t), DeclaresKey: declaresKeyArg(t)}
	}
	return list, nil
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

// Error is a call that did not complete: the same type in every adapter
// ([caller.Error]; package client's Error too), so errors.As finds it
// whichever SDK made the call. Its fields: Tool, and Key, the key of the
// call's record; State, the record's state when there is one; Text, a
// short text a model can read (what happened, when, what to do next);
// Err, the cause, whose chain holds the sentinel (ErrOutcomeUnknown,
// ErrDenied, ledger.ErrInProgress …).
type Error = caller.Error

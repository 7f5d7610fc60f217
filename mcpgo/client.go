package mcpgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	lclient "github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// ClientOptions configure a Client. The zero value (or nil) means the
// defaults, which are those of package client.
type ClientOptions struct {
	// Tenant scopes every record (default "default").
	Tenant string
	// Layer names whose records these are (default ledger.LayerClient;
	// see client.Options.Layer).
	Layer string
	// Session is the agent session the re-planning guard is scoped to
	// (default: a random id per Client).
	Session string
	// Owner names this process in leases (default ledger.NewOwner).
	Owner string
	// Retry is the backoff policy for transient and retryable failures.
	Retry *retry.Policy
	// Window is the re-planning window (planner.DefaultWindow when zero,
	// off when negative), for every tool.
	Window time.Duration
	// Tools holds per-tool settings: Idempotent tools may be re-sent after
	// an ambiguous failure, ReadOnly tools bypass the ledger, Window
	// overrides the re-planning window, Exclude, Retention, Reuse and
	// Compact shape the record.
	Tools ledger.Tools
	// TrustedServer makes the server's tool annotations count (readOnlyHint
	// bypasses the ledger, idempotentHint allows ambiguous retries).
	TrustedServer bool
	// Policy decides allow / ask / deny (default confirm.Default()).
	Policy *confirm.Policy
	// Confirmer asks a person. Nil means no one can be asked: a call the
	// policy says to ask about is not run and its record is REJECTED (fail
	// closed), as with package client.
	Confirmer confirm.Confirmer
	// Server labels the upstream for the policy and prompts.
	Server string
	// Lease of a PROCESSING record (ledger.DefaultLease when zero).
	Lease time.Duration
	// InProgressWait bounds how long a follower waits for another caller's
	// execution before ledger.ErrInProgress (30s when zero).
	InProgressWait time.Duration
	// AttemptTimeout bounds one attempt (default none: the caller's ctx).
	AttemptTimeout time.Duration
	// Retention of records (ledger.DefaultRetention when zero).
	Retention time.Duration
	// MaxArguments is the largest accepted argument JSON (1 MiB when zero);
	// MaxResult the size past which a stored result is compacted.
	MaxArguments int
	MaxResult    int
	Logger       *slog.Logger
	Now          func() time.Time
}

// ConnectFunc opens a new, initialized mcp-go client to the same server,
// on a transport made with Transport. The Client calls it to replace a
// dead connection before it retries with the same key.
type ConnectFunc func(ctx context.Context) (*client.Client, error)

// Client makes mcp-go tool calls through a ledger, with the meaning of
// package client's Client: keys from context (op.WithKey, op.WithChain,
// op.WithNewKey; client.WithKey is the same), the re-planning guard,
// retries by class with the same key and fence, UNKNOWN for an ambiguous
// failure a server that does not honour keys leaves behind, and replays of
// the stored result with the replay marker. Errors are *client.Error with
// package client's sentinels. It is safe for concurrent use.
type Client struct {
	store   ledger.Store
	lc      *ledger.Lifecycle
	guard   *planner.Guard
	opts    ClientOptions
	connect ConnectFunc
	log     *slog.Logger

	// mu guards mc, tools and toolsAt.
	mu      sync.Mutex
	mc      *client.Client
	tools   map[string]mcp.Tool // nil: not loaded
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
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Tenant == "" {
		o.Tenant = "default"
	}
	if o.Layer == "" {
		o.Layer = ledger.LayerClient
	}
	if o.Session == "" {
		o.Session = "s-" + randomHex(8)
	}
	if o.Owner == "" {
		o.Owner = ledger.NewOwner("mcpgo-client-" + randomHex(4))
	}
	if o.Lease <= 0 {
		o.Lease = ledger.DefaultLease
	}
	if o.InProgressWait <= 0 {
		o.InProgressWait = 30 * time.Second
	}
	if o.MaxArguments <= 0 {
		o.MaxArguments = 1 << 20
	}
	if o.MaxResult <= 0 {
		o.MaxResult = ledger.DefaultMaxResult
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Policy == nil {
		o.Policy = confirm.Default()
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	log := lg.With("component", "mcpledger.mcpgo.client", "tenant", o.Tenant, "session", o.Session)
	return &Client{
		store: store,
		lc: &ledger.Lifecycle{Store: store, Owner: o.Owner, Lease: o.Lease, Wait: o.InProgressWait,
			Now: o.Now, Logger: log},
		guard: &planner.Guard{Store: store, Window: o.Window, Tools: o.Tools, Now: o.Now},
		opts:  o,
		log:   log,
	}
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
	if mc == nil {
		return nil
	}
	return mc.Close()
}

// keyAware reports whether the server advertises the idempotency
// capability, which makes an ambiguous retry safe.
func keyAware(mc *client.Client) bool {
	if mc == nil {
		return false
	}
	_, ok := mc.GetServerCapabilities().Experimental[wire.Capability]
	return ok
}

// wireKey is id's key as the server sees it: as it is for a server that
// keeps keys per tenant, else made distinct per tenant (wire.TenantKey).
func wireKey(mc *client.Client, id ledger.ID) string {
	if mc != nil && wire.TenantAware(mc.GetServerCapabilities().Experimental) {
		return id.Key
	}
	return wire.TenantKey(id.Tenant, id.Key)
}

// tool returns the server's definition of name (nil when the server does
// not list it or the list is unavailable).
func (c *Client) tool(ctx context.Context, name string) *mcp.Tool {
	c.mu.Lock()
	tools, mc := c.tools, c.mc
	if c.opts.Now().Sub(c.toolsAt) >= toolsTTL {
		tools = nil
	}
	c.mu.Unlock()
	if tools == nil && mc != nil {
		res, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			// The call itself will meet the same failure and classify it.
			c.log.Debug("tool list unavailable", "tool", name, "err", err)
			return nil
		}
		tools = make(map[string]mcp.Tool, len(res.Tools))
		for _, t := range res.Tools {
			tools[t.Name] = t
		}
		c.mu.Lock()
		if c.mc == mc {
			c.tools, c.toolsAt = tools, c.opts.Now()
		}
		c.mu.Unlock()
	}
	if t, ok := tools[name]; ok {
		return &t
	}
	return nil
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
			c.log.Debug("close dead client", "err", err)
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
	ErrOutcomeUnknown    = lclient.ErrOutcomeUnknown
	ErrDenied            = lclient.ErrDenied
	ErrRejected          = lclient.ErrRejected
	ErrNotSent           = lclient.ErrNotSent
	ErrArgumentsTooLarge = lclient.ErrArgumentsTooLarge
)

// Error is package client's Error: a call that did not complete, with the
// key of its record and a model-facing text.
type Error = lclient.Error

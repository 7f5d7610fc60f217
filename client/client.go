package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/telemetry"
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

// Options configure a Client. The zero value (or nil) means the defaults.
type Options struct {
	// Tenant scopes every record (default "default").
	Tenant string
	// Layer names whose records these are (default ledger.LayerClient):
	// a proxy's client keeps ledger.LayerProxy, so an agent, a proxy and
	// a server guard that share one ledger each keep their own.
	Layer string
	// Session is the agent session the re-planning guard and "approve for
	// this session" are scoped to (default: a random id per Client).
	Session string
	// Owner names this process in leases (default ledger.NewOwner, which
	// lets a follower on this host see at once that the process is gone).
	Owner string
	// Retry is the backoff policy for transient and retryable failures.
	Retry *retry.Policy
	// Window is the re-planning window (default 10 minutes); Tools
	// overrides it per tool.
	Window time.Duration
	// Tools holds the per-tool settings: re-planning window, retention,
	// reuse policy, fingerprint exclusions, and the trusted configuration
	// that a tool is idempotent (ambiguous failures may be re-sent) or
	// read-only (it bypasses the ledger).
	Tools ledger.Tools
	// Policy decides allow / ask / deny (default confirm.Default()).
	Policy *confirm.Policy
	// Confirmer asks a person. Nil means no one can be asked: a call the
	// policy says to ask about is denied (fail closed), or queued when the
	// policy says whenNoOneCanBeAsked: queue.
	Confirmer confirm.Confirmer
	// Requester names who makes the calls, on queued approvals (a policy
	// may require the approver to be someone else); default "session:"
	// and the session id.
	Requester string
	// Server labels the upstream for the policy and prompts (default the
	// server's implementation name).
	Server string
	// TrustedServer makes the server's tool annotations count (readOnlyHint
	// bypasses the ledger, so a repeated read reads again; idempotentHint
	// allows ambiguous retries). A server the policy's trusted list names
	// is trusted too.
	TrustedServer bool
	// Retention of records (default 24h); Tools overrides it per tool.
	Retention time.Duration
	// Lease of a PROCESSING record (default 30s), renewed while the call runs.
	Lease time.Duration
	// InProgressWait bounds how long a follower waits for another caller's
	// execution before ErrInProgress (default 30s).
	InProgressWait time.Duration
	// AttemptTimeout bounds one attempt (default none: the caller's ctx).
	AttemptTimeout time.Duration
	// MaxArguments is the largest accepted argument JSON (default 1 MiB).
	MaxArguments int
	// MaxResult is the size past which a stored result is compacted
	// (default ledger.DefaultMaxResult).
	MaxResult int
	// Durability is when the ledger's writes reach the disk: every one
	// before it returns (ledger.Durable, the default), or claims durable
	// and each call's outcome written behind (ledger.WriteBehind): the
	// outcome is visible to every process at once and on disk with the
	// store's next durable write or within its short window, which spares
	// one fsync per call. A machine crash inside that window leaves the
	// record PROCESSING under a dead owner, so it becomes UNKNOWN and
	// waits for reconciliation; the call is never executed twice. Stores
	// that do not know the setting write durably.
	Durability ledger.Durability
	Logger     *slog.Logger
	Now        func() time.Time
	// MeterProvider and TracerProvider receive the metrics and spans of
	// every call (the global OpenTelemetry providers when nil); see
	// package telemetry. When the store is a ledger.EventLog, each call
	// also leaves an event there, written in the background.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
}

// ConnectFunc opens a new session to the same server. The Client calls it to
// replace a dead session before retrying with the same key.
type ConnectFunc func(ctx context.Context) (*mcp.ClientSession, error)

// Client makes tool calls through a ledger. It is safe for concurrent use.
type Client struct {
	store   ledger.Store
	lc      *ledger.Lifecycle
	opts    Options
	guard   *planner.Guard
	connect ConnectFunc
	log     *slog.Logger
	tel     *telemetry.Telemetry

	// flights shares one execution among same-key calls in this process.
	flights flightGroup
	// keyArg caches, per *mcp.Tool, whether its schema declares the key
	// argument.
	keyArg sync.Map
	// finals answers repeats of finished operations without a ledger read.
	finals finals

	// mu guards session and tools.
	mu      sync.Mutex
	session *mcp.ClientSession
	tools   map[string]*mcp.Tool // nil: not loaded
	toolsAt time.Time
}

// New wraps an open session. A dead session is not replaced; use Dial for that.
func New(session *mcp.ClientSession, store ledger.Store, opts *Options) *Client {
	c := newClient(store, opts)
	c.session = session
	return c
}

// Dial opens a session with connect and keeps using connect to replace the
// session when it dies (a stdio server that exited, say), so an interrupted
// call is retried with the same key on a new session.
func Dial(ctx context.Context, connect ConnectFunc, store ledger.Store, opts *Options) (*Client, error) {
	s, err := connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: connect: %w", err)
	}
	c := newClient(store, opts)
	c.session = s
	c.connect = connect
	return c, nil
}

func newClient(store ledger.Store, opts *Options) *Client {
	var o Options
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
		o.Owner = ledger.NewOwner("client-" + randomHex(4))
	}
	if o.Window == 0 {
		o.Window = 10 * time.Minute
	}
	if o.Lease == 0 {
		o.Lease = ledger.DefaultLease
	}
	if o.InProgressWait == 0 {
		o.InProgressWait = 30 * time.Second
	}
	if o.MaxArguments == 0 {
		o.MaxArguments = 1 << 20
	}
	if o.MaxResult == 0 {
		o.MaxResult = ledger.DefaultMaxResult
	}
	if o.Policy == nil {
		o.Policy = confirm.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	log := lg.With("component", "mcpledger.client", "tenant", o.Tenant, "session", o.Session)
	return &Client{
		store: store,
		lc: &ledger.Lifecycle{Store: store, Owner: o.Owner, Lease: o.Lease, Wait: o.InProgressWait,
			Now: o.Now, Logger: log},
		opts:  o,
		guard: &planner.Guard{Store: store, Window: o.Window, Tools: o.Tools, Now: o.Now},
		log:   log,
		tel:   newTelemetry(store, o, log),
	}
}

// Session returns the current session.
func (c *Client) Session() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Repeatable runs fn, a request that is safe to send twice (a list, a
// read, a prompt; never a tool call, which goes through CallTool), on the
// current session. When the session turns out to be gone and the client
// has a connect function, it runs fn once more on a new session, which
// later tool calls use too.
func (c *Client) Repeatable(ctx context.Context, fn func(ctx context.Context, s *mcp.ClientSession) error) error {
	s := c.Session()
	if s == nil {
		var err error
		if s, err = c.reconnect(ctx, nil); err != nil {
			return err
		}
	}
	err := fn(ctx, s)
	if err == nil || c.connect == nil || !deadSession(err) || ctx.Err() != nil {
		return err
	}
	c.log.Info("session gone; reconnecting", "err", err)
	s, rerr := c.reconnect(ctx, s)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	return fn(ctx, s)
}

// LedgerServer is an MCP server with ledger_status and ledger_list over
// this client's calls: its tenant and session, and its per-tool argument
// exclusions, so that ledger_status asked by arguments finds a call just as
// the re-planning guard does. Mount it in-process over
// mcp.NewInMemoryTransports or serve it to the model's host.
func (c *Client) LedgerServer() *mcp.Server {
	return planner.NewServerWith(c.store, c.opts.Tenant, c.opts.Session, planner.ToolsOptions{Exclude: c.exclusions(), Layer: c.opts.Layer})
}

// Close closes the current session and writes the call events still
// queued. The store is the caller's to close, after the Client.
func (c *Client) Close() error {
	c.mu.Lock()
	s := c.session
	c.session = nil
	c.mu.Unlock()
	err := c.closeTelemetry()
	if s == nil {
		return err
	}
	return errors.Join(s.Close(), err)
}

// ToolListChanged drops the cached tool list. Wire it as
// mcp.ClientOptions.ToolListChangedHandler (through a closure when the
// Client is made after the mcp.Client).
func (c *Client) ToolListChanged(context.Context, *mcp.ToolListChangedRequest) {
	c.mu.Lock()
	c.tools = nil
	c.mu.Unlock()
	c.keyArg.Clear()
}

// keyAware reports whether the server advertises the idempotency
// capability, which makes an ambiguous retry safe.
func keyAware(s *mcp.ClientSession) bool {
	if s == nil {
		return false
	}
	ir := s.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return false
	}
	_, ok := ir.Capabilities.Experimental[wire.Capability]
	return ok
}

// wireKey is id's key as the server sees it: as it is for a server that
// keeps keys per tenant, else made distinct per tenant (wire.TenantKey), so
// two tenants of this ledger never share a server-side record.
func wireKey(s *mcp.ClientSession, id ledger.ID) string {
	if s != nil {
		if ir := s.InitializeResult(); ir != nil && ir.Capabilities != nil && wire.TenantAware(ir.Capabilities.Experimental) {
			return id.Key
		}
	}
	return wire.TenantKey(id.Tenant, id.Key)
}

// serverName labels the upstream for the policy and prompts.
func (c *Client) serverName(s *mcp.ClientSession) string {
	if c.opts.Server != "" {
		return c.opts.Server
	}
	if s != nil {
		if ir := s.InitializeResult(); ir != nil && ir.ServerInfo != nil {
			return ir.ServerInfo.Name
		}
	}
	return ""
}

// toolsTTL bounds how stale the cached tool list may get when the server
// sends no list-changed notifications.
const toolsTTL = time.Minute

// tool returns the server's definition of name, or nil when the server does
// not list it.
func (c *Client) tool(ctx context.Context, name string) (*mcp.Tool, error) {
	c.mu.Lock()
	tools, at, s := c.tools, c.toolsAt, c.session
	c.mu.Unlock()
	if tools != nil && c.opts.Now().Sub(at) < toolsTTL {
		if t, ok := tools[name]; ok {
			return t, nil
		}
	}
	if s == nil {
		return nil, fmt.Errorf("client: %w", mcp.ErrConnectionClosed)
	}
	fresh := map[string]*mcp.Tool{}
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("client: list tools: %w", err)
		}
		fresh[t.Name] = t
	}
	c.mu.Lock()
	if c.session == s {
		c.tools, c.toolsAt = fresh, c.opts.Now()
	}
	c.mu.Unlock()
	c.keyArg.Clear() // the old definitions are gone
	return fresh[name], nil
}

// reconnect replaces dead when it is still the current session. It reports
// whether a usable session is now in place.
func (c *Client) reconnect(ctx context.Context, dead *mcp.ClientSession) (*mcp.ClientSession, error) {
	if c.connect == nil {
		return nil, errors.New("client: session is closed and no connect function was given (use client.Dial)")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != dead && c.session != nil {
		return c.session, nil
	}
	if dead != nil {
		if err := dead.Close(); err != nil {
			c.log.Debug("close dead session", "err", err)
		}
	}
	s, err := c.connect(ctx)
	if err != nil {
		c.session = nil
		return nil, fmt.Errorf("client: reconnect: %w", err)
	}
	c.session = s
	c.tools = nil
	return s, nil
}

// exclusions are the per-tool fingerprint exclusions of Options.Tools.
func (c *Client) exclusions() map[string][]string {
	m := make(map[string][]string, len(c.opts.Tools))
	for name, t := range c.opts.Tools {
		if len(t.Exclude) > 0 {
			m[name] = t.Exclude
		}
	}
	return m
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("client: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

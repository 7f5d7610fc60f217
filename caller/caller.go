package caller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/process"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// Options configure a Caller. The zero value (or nil) means the defaults.
// The client adapters' own options types (client.Options for go-sdk,
// mcpgo.ClientOptions for mcp-go) have these fields in this order, so that
// go doc shows them where a user looks, and convert to Options; a field
// added here is added there too, or the adapters do not compile.
type Options struct {
	// Tenant scopes every record (default "default").
	Tenant string
	// Layer names whose records these are (default ledger.LayerClient):
	// a proxy's client keeps ledger.LayerProxy, so an agent, a proxy and
	// a server guard that share one ledger each keep their own.
	Layer string
	// Session is the agent session the re-planning guard and "approve for
	// this session" are scoped to (default: a random id per Caller).
	Session string
	// Owner names this process in leases (default process.NewOwner, which
	// lets a follower on this host see at once that the process is gone).
	Owner string
	// Retry is the backoff policy for transient and retryable failures.
	Retry *retry.Policy
	// Window is the re-planning window (default 10 minutes); Tools
	// overrides it per tool.
	Window time.Duration
	// Tools holds the per-tool settings: re-planning window, retention,
	// reuse policy, fingerprint exclusions, redaction, compaction, and the
	// trusted configuration that a tool is idempotent (ambiguous failures
	// may be re-sent) or read-only (it bypasses the ledger).
	Tools ledger.Tools
	// Policy decides allow / ask / deny / queue (default confirm.Default()).
	Policy *confirm.Policy
	// Confirmer asks a person. Nil means no one can be asked: a call the
	// policy says to ask about is rejected (fail closed), or queued when
	// the policy says whenNoOneCanBeAsked: queue.
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
	// execution before ErrInProgress (default 30s: a tool call may take that
	// long, and the wait holds only the caller's own context; a server
	// guard answers a duplicate sooner, see server.Options.InProgressWait).
	InProgressWait time.Duration
	// AttemptTimeout bounds one attempt (default none: the caller's ctx).
	AttemptTimeout time.Duration
	// ChildProcess says the server is a child process that the adapter's
	// connect function starts and speaks to over stdio (go-sdk's
	// CommandTransport): once a session has been closed, its process has
	// exited, and nothing sent on it can still take effect. A probe's
	// absent answer about a call sent on such a session is then believed
	// at once, without waiting for the quiet period.
	ChildProcess bool
	// ProbeBudget bounds the probe a call runs when it meets an UNKNOWN
	// record of its key and the policy names a probe for the tool
	// (DefaultProbeBudget when zero; the call's own deadline when sooner).
	ProbeBudget time.Duration
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
	// Peer is where the server is, for those spans and metrics
	// (network.transport, server.address, server.port): a session hides
	// its transport, so whoever opens it says (telemetry.PeerOfURL,
	// telemetry.PeerOfStdio). The zero value reports none.
	Peer telemetry.Peer
	// Telemetry, when set, receives the metrics, spans and events of the
	// calls instead of one the Caller makes for itself (MeterProvider and
	// TracerProvider are then unused): many Callers of one process (a
	// proxy's, one per host session) share one event writer, one set of
	// metric attributes per tool and one UNKNOWN gauge. Make it with
	// NewTelemetry; the Caller never closes it.
	Telemetry *telemetry.Telemetry
	// Finals, when set, is where the Caller remembers the finished records
	// it sees, shared with the other Callers over the same store (nil: a
	// memory of its own). See Finals.
	Finals *Finals
}

// Request is one tools/call as an adapter hands it over: the tool, its
// arguments (any JSON object value, as MarshalArgs takes it) and the
// adapter's own request (P), which the Caller passes back, untouched, with
// every attempt.
type Request[P any] struct {
	Tool      string
	Arguments any
	Params    P
}

// Attempt is one request the Caller asks its Conn to send.
type Attempt[P any] struct {
	// Params is the adapter's own request of the call.
	Params P
	Tool   string
	// Args are the arguments as they were fingerprinted: a JSON object.
	Args json.RawMessage
	// Keyed: the call goes through the ledger. Key (as the server must see
	// it) then goes in _meta[wire.MetaKey], and Fence, when its token is
	// positive, in _meta[wire.MetaFence] and [wire.MetaFenceScope]. A read
	// that bypasses the ledger is sent without them.
	Keyed bool
	Key   string
	Fence wire.Fence
	// KeyArg: the key must also go in the idempotency_key argument (the
	// tool declares it, or the arguments already carry one); WithKeyArg
	// builds those arguments.
	KeyArg bool
	// Via is the adapter's own note of the connection it sent on, read
	// back by Repair.
	Via any
}

// Wire writes the attempt's key and fence into meta, the request's fresh
// _meta map, when the call is keyed, and returns the arguments to send:
// Args, or Args with the idempotency_key argument when KeyArg.
func (a *Attempt[P]) Wire(meta map[string]any) any {
	if !a.Keyed {
		return a.Args
	}
	meta[wire.MetaKey] = a.Key
	if a.Fence.Token > 0 {
		meta[wire.MetaFence] = a.Fence.Token
		meta[wire.MetaFenceScope] = a.Fence.Scope
	}
	if a.KeyArg {
		return WithKeyArg(a.Args, a.Key)
	}
	return a.Args
}

// Tool is what the server says of a tool it lists.
type Tool struct {
	Name string
	// Hints are its annotations (nil: it sent none).
	Hints *confirm.Hints
	// DeclaresKey: its input schema has an idempotency_key property.
	DeclaresKey bool

	once sync.Once
	conf confirm.Tool
}

// Server is what the server said of itself when the session began.
type Server struct {
	// Name is its implementation name.
	Name string
	// KeyAware: it advertises the idempotency capability; Capability is
	// the capability's value, decoded from JSON.
	KeyAware   bool
	Capability any
	// TenantAware: it keeps keys per tenant (wire.TenantAware).
	TenantAware bool
}

// Conn is the adapter's side of the Caller: one MCP server reached through
// one SDK. It is safe for concurrent use.
type Conn[P any, R comparable] interface {
	// Send makes one attempt and returns the server's result, with its
	// bytes as the server sent them when the SDK keeps them (nil: the
	// Codec encodes the result). Errors are in the terms package retry
	// classifies (go-sdk's jsonrpc.Error for a JSON-RPC error answer).
	Send(ctx context.Context, a *Attempt[P]) (R, json.RawMessage, error)
	// Tool is the server's definition of name, nil when it does not list
	// it; the error says why the list could not be read.
	Tool(ctx context.Context, name string) (*Tool, error)
	// Server is what the current session's server said of itself.
	Server() Server
	// Repair replaces the connection a's attempt went out on when err
	// shows it is gone, before the Caller tries again.
	Repair(ctx context.Context, a *Attempt[P], err error)
}

// Codec is how the Caller handles the SDK's tool result R (a pointer).
type Codec[R comparable] interface {
	// Encode is res as the ledger stores it: the SDK's own encoding.
	Encode(res R) (json.RawMessage, error)
	// Decode is a stored result as the SDK's client would have decoded it.
	Decode(raw json.RawMessage) (R, error)
	// Copy is a private deep copy of res; false when res holds parts the
	// adapter cannot copy without a round trip through JSON.
	Copy(res R) (R, bool)
	// Mark adds the replay marker to res's _meta (a fresh map).
	Mark(res R, m wire.Replay)
	IsError(res R) bool
	// Meta is res's _meta, read only.
	Meta(res R) map[string]any
	// Text is res's text content, joined.
	Text(res R) string
}

// Replay is a finished record's stored result as the SDK's client would
// have decoded it, with the replay marker added to its _meta.
func Replay[R comparable](cd Codec[R], rec *ledger.Record) (R, error) {
	res, err := cd.Decode(rec.Result)
	if err != nil {
		return res, err
	}
	cd.Mark(res, wire.Marker(rec))
	return res, nil
}

// Caller runs tool calls through a ledger, from the re-planning guard to
// the answer: policy and confirmation, the queue, the claim, sending with
// retries under one key, settling the record, replay and resend. The SDK
// adapters translate their requests and results in and out; every outcome
// is decided here and in package ledger. It is safe for concurrent use.
type Caller[P any, R comparable] struct {
	store ledger.Store
	lc    *ledger.Lifecycle
	opts  Options
	guard *planner.Guard
	conn  Conn[P, R]
	codec Codec[R]
	log   *slog.Logger
	tel   *telemetry.Telemetry
	// ownTel: tel is the Caller's own, closed by Close.
	ownTel bool

	// flights shares one execution among same-key calls in this process.
	flights flightGroup[R]
	// finals answers repeats of finished operations without a ledger read:
	// Options.Finals, or the Caller's own.
	finals *Finals
	// sends remembers where this process last sent the calls it left
	// UNKNOWN, for a probe to ask the Conn whether that is gone.
	sends lastSends
}

// New makes a Caller that sends through conn. component names the adapter
// in logs ("mcpledger.client") and, with a random suffix, in the default
// lease owner.
func New[P any, R comparable](store ledger.Store, opts *Options, conn Conn[P, R], codec Codec[R], component string) *Caller[P, R] {
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
		o.Owner = process.NewOwner(component + "-" + randomHex(4))
	}
	if o.Window == 0 {
		o.Window = 10 * time.Minute
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
	log := lg.With("component", "mcpledger."+component, "tenant", o.Tenant, "session", o.Session)
	fin := o.Finals
	if fin == nil {
		fin = new(Finals)
	}
	tel, own := o.Telemetry, false
	if tel == nil {
		tel, own = newTelemetry(store, o, log), true
	}
	return &Caller[P, R]{
		store: store,
		lc: &ledger.Lifecycle{Store: store, Owner: o.Owner, Lease: o.Lease, Wait: o.InProgressWait,
			Now: o.Now, Logger: log},
		opts:   o,
		guard:  &planner.Guard{Store: store, Window: o.Window, Tools: o.Tools, Now: o.Now},
		conn:   conn,
		codec:  codec,
		log:    log,
		tel:    tel,
		ownTel: own,
		finals: fin,
	}
}

// Options are the Caller's options with every default filled in.
func (c *Caller[P, R]) Options() Options { return c.opts }

// Store is the ledger the Caller records in.
func (c *Caller[P, R]) Store() ledger.Store { return c.store }

// Log is the Caller's logger.
func (c *Caller[P, R]) Log() *slog.Logger { return c.log }

// Exclusions are the per-tool fingerprint exclusions of Options.Tools.
func (c *Caller[P, R]) Exclusions() map[string][]string {
	m := make(map[string][]string, len(c.opts.Tools))
	for name, t := range c.opts.Tools {
		if len(t.Exclude) > 0 {
			m[name] = t.Exclude
		}
	}
	return m
}

// confirmTool is t as the policy sees it, made once per definition.
func (c *Caller[P, R]) confirmTool(name string, t *Tool) confirm.Tool {
	server := c.serverName()
	if t == nil {
		return confirm.Tool{Name: name, Server: server}
	}
	t.once.Do(func() { t.conf = confirm.Tool{Name: name, Hints: t.Hints} })
	ct := t.conf
	ct.Server = server
	return ct
}

// serverName labels the upstream for the policy and prompts.
func (c *Caller[P, R]) serverName() string {
	if c.opts.Server != "" {
		return c.opts.Server
	}
	return c.conn.Server().Name
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("caller: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

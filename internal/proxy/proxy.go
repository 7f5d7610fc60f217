//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/planner/ledgertools"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// TransportFunc returns a new transport to the upstream: a command to
// start (mcp.CommandTransport), an HTTP endpoint. It is called once at New,
// again for every further host session, and again by the ledger client to
// replace a session that died.
type TransportFunc func(ctx context.Context) (mcp.Transport, error)

// upstreamVersion is the protocol version the proxy asks of the upstream:
// the same as it offers the host (see the package doc), so each message
// relayed means the same on both sides (logging/setLevel, for one, does
// not exist from 2026-07-28).
const upstreamVersion = "2025-11-25"

// Options configure a Proxy. Transport and Store are required.
type Options struct {
	Transport TransportFunc
	Store     ledger.Store
	// Tenant scopes the ledger records and the ledger tools (default
	// "default").
	Tenant string
	// Session names the ledger session of every host session: one agent
	// behind several connections, shared on purpose, so that a call it
	// re-plans after reconnecting is recognised. Empty: each host session
	// is a ledger session of its own, "proxy-" and its MCP session id (a
	// random id when the transport has none), so the re-planning guard
	// never crosses from one conversation to another. Either way a host
	// that names its session in the _meta of initialize (MetaSession)
	// gets that one.
	Session string
	// Policy decides which calls need a person (default confirm.Default()).
	Policy *confirm.Policy
	// PolicyFile names the policy's file in the message of a call denied
	// because no one could be asked; empty means the built-in rules.
	PolicyFile string
	// Terminal is asked when the host cannot answer an elicitation: the
	// controlling terminal, typically. Nil: no one, and such calls are
	// denied.
	Terminal confirm.Confirmer
	// Client tunes the ledger client (retries, windows, timeouts). Its
	// Tenant, Session, Policy, Confirmer and TrustedServer are set by the
	// proxy.
	Client *client.Options
	// Name and Version are the proxy's implementation as the host and the
	// upstream see it (default "mcpledger-proxy").
	Name, Version string
	Logger        *slog.Logger
	// SweepEvery is how often the proxy purges the records whose
	// retention has ended, as the server guard's Run does, so that a
	// long-running proxy's ledger does not grow until someone runs
	// agentctl ledger purge (DefaultSweepEvery when zero; negative: never).
	SweepEvery time.Duration
	// SweepLimit is the most records one sweep purges, so each does bounded
	// work; the rest waits for the next (ledger.DefaultSweepLimit when
	// zero).
	SweepLimit int
	// Now is the clock of the sweeps, which purge what expired by it
	// (time.Now when nil); give the Store the same clock.
	Now func() time.Time
	// IdleRelease is how long the proxy goes without a host request
	// before it returns the memory of the burst before to the operating
	// system (DefaultIdleRelease when zero; negative: never). Release is
	// what it calls then (when nil: the Store's ReleaseMemory if it is a
	// ledger.MemoryReleaser, closing idle upstream connections, and
	// debug.FreeOSMemory).
	IdleRelease time.Duration
	Release     func()
	// IdleWait, when not nil, stands for waiting one period of
	// IdleRelease: it returns true once the period has passed, false when
	// ctx is done (the proxy is closing). The proxy calls it again only
	// when it has dealt with the period before, so tests pass the periods
	// themselves instead of waiting for a clock.
	IdleWait func(ctx context.Context) bool
	// ReconcileEvery is how often the proxy puts the UNKNOWN records of
	// its layer that are due for an attempt to the probe the policy names
	// for their tool (see ReconcileDue; DefaultReconcileEvery when zero;
	// negative: never). Without probes in the policy it never does.
	ReconcileEvery time.Duration
	// ReconcileLimit bounds the records one pass probes
	// (DefaultReconcileLimit when zero); the rest wait for the next.
	ReconcileLimit int
	// ReconcileWait, when not nil, stands for waiting one period of
	// ReconcileEvery: it returns true when a pass is due, false when ctx
	// is done (the proxy is closing), so tests drive the passes.
	ReconcileWait func(ctx context.Context) bool
}

// finalsBudget bounds the finished records the proxy remembers to answer
// a host's repeat without a ledger read: some 3,000 of a small tool's
// (about 1.2 KB each with their decoded result), shared by every host
// session. A miss only costs a ledger read.
const finalsBudget = 4 << 20

// DefaultSweepEvery is the period of the proxy's purge of expired records.
const DefaultSweepEvery = time.Minute

// Proxy is an MCP server that relays to an upstream MCP server through the
// ledger. It is safe for concurrent use by many host sessions.
type Proxy struct {
	opts     Options
	srv      *mcp.Server
	log      *slog.Logger
	upstream string // the upstream's name, for the policy and prompts
	trusted  bool
	// tel is the telemetry of every host session's ledger client: one
	// event writer and one set of metric attributes for the proxy, not
	// one per session.
	tel *telemetry.Telemetry
	// finals is the memory of finished records of every host session's
	// ledger client, under one budget (finalsBudget), forgotten when the
	// proxy goes idle: each client kept up to 16 MiB of its own.
	finals *caller.Finals

	// up is the client of every upstream session (see upstreamClient).
	up *mcp.Client

	// hostSend is the server's sending method handler below the proxy's
	// middleware: it sends any client-bound method to a host session,
	// which the SDK has no exported call for (list-changed, log messages).
	hostSend mcp.MethodHandler

	// refresh asks the tool refresher for a new upstream tool list; a
	// buffer of one coalesces a burst of list-changed notifications.
	refresh chan *link
	stop    context.CancelFunc
	done    chan struct{}
	swept   chan struct{} // closed when the sweeper has returned
	// reconciled is closed when the reconciler has returned.
	reconciled chan struct{}
	// passMu makes ReconcileDue passes one at a time: a pass connects
	// sweepLink's client when it has none.
	passMu sync.Mutex
	// requests counts the host's requests; released is closed when the
	// releaser has returned.
	requests atomic.Uint64
	released chan struct{}

	// mu guards links, first, closed and sweepLink.
	mu     sync.Mutex
	links  map[*mcp.ServerSession]*link
	first  *link // connected by New, bound to the first host session
	closed bool
	// sweepLink is the proxy's own upstream session, for background
	// probes (see reconcileClient); nil until the first one.
	sweepLink *link

	// toolsMu guards tools, the upstream tool names mirrored on srv, and
	// keyArgs, the names of those whose input schema declares
	// idempotency_key (a host's key may come there).
	toolsMu sync.Mutex
	tools   []string
	keyArgs map[string]bool
}

// New connects to the upstream once, to learn its capabilities, tools and
// instructions, and builds the host-facing server. A failure to connect is
// returned as it is: nothing was sent to any tool.
func New(ctx context.Context, opts *Options) (*Proxy, error) {
	if opts == nil || opts.Transport == nil || opts.Store == nil {
		return nil, errors.New("proxy: Options.Transport and Options.Store are required")
	}
	p := &Proxy{opts: *opts, links: map[*mcp.ServerSession]*link{}, refresh: make(chan *link, 1), done: make(chan struct{}), swept: make(chan struct{}), reconciled: make(chan struct{}), released: make(chan struct{}),
		finals: caller.NewFinals(finalsBudget)}
	if p.opts.Tenant == "" {
		p.opts.Tenant = "default"
	}
	// The built-in redaction rules compile on first use (about 20 ms and
	// 3 MB). A proxy compiles them now, so that its first call does not
	// wait for them and their memory is not scattered among a burst's.
	_ = redact.Text("")
	if p.opts.Policy == nil {
		p.opts.Policy = confirm.Default()
	}
	if p.opts.Name == "" {
		p.opts.Name = "mcpledger-proxy"
	}
	if p.opts.Version == "" {
		p.opts.Version = "0.1.0"
	}
	p.log = p.opts.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.log = p.log.With("component", "mcpledger.proxy")

	p.up = p.upstreamClient()
	first := newLink(p)
	s, err := first.dial(ctx)
	if err != nil {
		return nil, err
	}
	p.tel = p.sharedTelemetry()
	ir := s.InitializeResult()
	if ir != nil && ir.ServerInfo != nil {
		p.upstream = ir.ServerInfo.Name
	}
	p.trusted = p.opts.Policy.Trusts(p.upstream)
	// The ledger client comes with the first host session, which names
	// its ledger session; until then the session waits in pending.
	first.pending = s
	p.first = first

	p.srv = mcp.NewServer(&mcp.Implementation{Name: p.opts.Name, Version: p.opts.Version, Title: p.title()}, p.serverOptions(ir))
	p.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		p.hostSend = next
		return next
	})
	p.srv.AddReceivingMiddleware(p.relayMiddleware)
	// Outermost: whatever answers below, the host gets a JSON-RPC code.
	p.srv.AddReceivingMiddleware(codedErrors)
	ledgertools.Add(p.srv, p.opts.Store, func(ctx context.Context, req *mcp.CallToolRequest) (string, string, error) {
		l, err := p.linkFor(ctx, req.Session)
		if err != nil {
			return "", "", err
		}
		// A queued call no one decided before its expiry is REJECTED
		// from then on; end such leases first, so the model asking about
		// one is told it did not run rather than that it still waits.
		if _, err := p.opts.Store.ExpireLeases(ctx); err != nil {
			return "", "", fmt.Errorf("proxy: end the leases that ran out before reading the ledger: %w", err)
		}
		return p.opts.Tenant, l.session, nil
	}, &ledgertools.Options{Layer: ledger.LayerProxy})
	if err := p.syncTools(ctx, first); err != nil {
		_ = first.close()
		_ = p.closeTelemetry()
		return nil, err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = stop
	go p.refresher(rctx)
	go p.sweeper(rctx)
	go p.reconciler(rctx)
	go p.releaser(rctx)
	return p, nil
}

// sweeper runs Sweep every Options.SweepEvery until ctx ends. Each pass
// deletes what expired since the last one: the work per pass follows the
// call rate, not the ledger's size.
func (p *Proxy) sweeper(ctx context.Context) {
	defer close(p.swept)
	every := p.opts.SweepEvery
	if every == 0 {
		every = DefaultSweepEvery
	}
	if every < 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.Sweep(ctx)
	}
}

// Sweep purges the settled records whose retention has ended (every
// layer's: purging is ledger-wide maintenance, as for the server guard),
// at most Options.SweepLimit of them, and returns how many. Errors are
// logged: the next pass tries again.
func (p *Proxy) Sweep(ctx context.Context) int {
	limit := p.opts.SweepLimit
	if limit <= 0 {
		limit = ledger.DefaultSweepLimit
	}
	now := time.Now
	if p.opts.Now != nil {
		now = p.opts.Now
	}
	n, err := p.opts.Store.Purge(ctx, ledger.PurgeRequest{ExpiredBy: now(), Limit: limit})
	if err != nil && ctx.Err() == nil {
		p.log.Warn("purging expired records failed; the next sweep tries again", "err", err)
	}
	if n >= limit {
		p.log.Warn("more records past retention than one sweep purges; the rest go at the next sweeps", "purged", n)
	}
	return n
}

// Server is the host-facing MCP server: run it over stdio, or serve it with
// mcp.NewStreamableHTTPHandler.
func (p *Proxy) Server() *mcp.Server { return p.srv }

// Upstream is the upstream server's name, as it introduced itself.
func (p *Proxy) Upstream() string { return p.upstream }

// Close closes every upstream session (a command upstream is stopped). The
// store is the caller's.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := make([]*link, 0, len(p.links)+1)
	for _, l := range p.links {
		links = append(links, l)
	}
	if p.first != nil {
		links = append(links, p.first)
	}
	p.mu.Unlock()
	p.stop()
	<-p.done
	<-p.swept
	<-p.reconciled
	<-p.released
	p.mu.Lock()
	// After the reconciler: it makes sweepLink, and has returned.
	if p.sweepLink != nil {
		links = append(links, p.sweepLink)
	}
	p.mu.Unlock()
	var errs []error
	for _, l := range links {
		if err := l.close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	// After the links: their clients' last calls have ended.
	if err := p.closeTelemetry(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sharedTelemetry is the telemetry the host sessions' ledger clients
// share, unless Options.Client brings one. Each client used to make its
// own: a goroutine writing its events, and about 27 KB of metric
// attribute sets per tool, for every host session; and, with a meter
// provider, one UNKNOWN gauge per session, each counting the ledger's
// UNKNOWN records at every collection.
func (p *Proxy) sharedTelemetry() *telemetry.Telemetry {
	if c := p.opts.Client; c != nil && c.Telemetry != nil {
		return nil
	}
	var o client.Options
	if p.opts.Client != nil {
		o = *p.opts.Client
	}
	o.Logger = p.log
	return client.NewTelemetry(p.opts.Store, &o)
}

// closeTelemetry writes the call events still queued.
func (p *Proxy) closeTelemetry() error {
	if p.tel == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.tel.Close(ctx); err != nil {
		return fmt.Errorf("proxy: write call events: %w", err)
	}
	return nil
}

func (p *Proxy) title() string {
	if p.upstream == "" {
		return "MCP server through the mcpledger ledger"
	}
	return p.upstream + " through the mcpledger ledger"
}

// legacyVersions are the protocol versions the proxy offers the host: all
// the SDK speaks before 2026-07-28 (see the package doc).
func legacyVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
}

// serverOptions advertises what the upstream offers, plus tools (always:
// the ledger tools are there) and the idempotency capability. The relay
// handlers are set only for what the upstream offers: the SDK infers
// capabilities from handlers, and the host must not be promised more.
func (p *Proxy) serverOptions(ir *mcp.InitializeResult) *mcp.ServerOptions {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	o := &mcp.ServerOptions{
		Capabilities:                caps,
		Logger:                      p.log,
		SupportedProtocolVersions:   legacyVersions(),
		ProgressNotificationHandler: p.hostProgress,
	}
	if ir != nil {
		o.Instructions = ir.Instructions
	}
	if ir != nil && ir.Capabilities != nil {
		up := ir.Capabilities
		caps.Logging, caps.Prompts, caps.Resources, caps.Completions = up.Logging, up.Prompts, up.Resources, up.Completions
		if up.Completions != nil {
			o.CompletionHandler = p.complete
		}
		if up.Resources != nil && up.Resources.Subscribe {
			o.SubscribeHandler, o.UnsubscribeHandler = p.subscribe, p.unsubscribe
		}
	}
	retention := ledger.DefaultRetention
	if c := p.opts.Client; c != nil && c.Retention > 0 {
		retention = c.Retention
	}
	caps.Experimental = server.Capability(retention)
	return o
}

// ledgerClient wraps the link's upstream session in the ledger client with
// the proxy's scope, policy and confirmer.
func (p *Proxy) ledgerClient(ctx context.Context, l *link) (*client.Client, error) {
	var o client.Options
	if p.opts.Client != nil {
		o = *p.opts.Client
	}
	o.Tenant, o.Session, o.Policy = p.opts.Tenant, l.session, p.opts.Policy
	o.Layer = ledger.LayerProxy
	o.Confirmer = &hostConfirmer{terminal: p.opts.Terminal, policyFile: p.opts.PolicyFile}
	o.TrustedServer = p.trusted
	if o.Server == "" {
		o.Server = p.upstream
	}
	if o.Logger == nil {
		// The client names its own component (mcpledger.client): p.log
		// would name the proxy's too, on the same line.
		o.Logger = p.opts.Logger
	}
	if p.tel != nil {
		o.Telemetry = p.tel
	}
	if o.Finals == nil {
		o.Finals = p.finals
	}
	return client.Dial(ctx, l.dial, p.opts.Store, &o)
}

// linkFor returns the link of host session ss, connecting a new upstream
// session for it when it has none. The first host session gets the
// upstream session New opened.
func (p *Proxy) linkFor(ctx context.Context, ss *mcp.ServerSession) (*link, error) {
	if ss == nil {
		return nil, errors.New("proxy: request without a host session")
	}
	session, err := p.sessionOf(ss)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("proxy: closed")
	}
	if l, ok := p.links[ss]; ok {
		p.mu.Unlock()
		<-l.ready
		return l, l.err
	}
	l := p.first
	p.first = nil
	if l == nil {
		l = newLink(p)
	}
	l.bind(ss, session)
	p.links[ss] = l
	p.mu.Unlock()

	// Connect outside the lock: other host sessions need not wait.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	c, err := p.ledgerClient(cctx, l)
	if err != nil {
		l.err = fmt.Errorf("proxy: connecting to the upstream for a new host session: %w", err)
		p.mu.Lock()
		delete(p.links, ss) // the next request tries again
		p.mu.Unlock()
		close(l.ready)
		return nil, l.err
	}
	if err := l.setClient(c); err != nil {
		l.err = err
		close(l.ready)
		return nil, err
	}
	close(l.ready)
	go p.unlinkWhenDone(ss, l)
	return l, nil
}

// MetaSession is the _meta entry of initialize in which a host may name
// its ledger session (the key rules apply to the name).
const MetaSession = wire.MetaSession

// sessionOf is the ledger session of host session ss: the one it names,
// else Options.Session, else its own.
func (p *Proxy) sessionOf(ss *mcp.ServerSession) (string, error) {
	if ip := ss.InitializeParams(); ip != nil {
		if v, ok := ip.Meta[MetaSession]; ok {
			name, _ := v.(string)
			if err := ledger.ValidateKey(name); err != nil {
				return "", fmt.Errorf("proxy: the session named in _meta[%q] of initialize, %#v, breaks the key rules (%v); name it with 1-255 of [A-Za-z0-9._:~-] and reconnect", MetaSession, v, err)
			}
			return name, nil
		}
	}
	if p.opts.Session != "" {
		return p.opts.Session, nil
	}
	if id := ss.ID(); id != "" {
		return "proxy-" + id, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.links[ss]; ok {
		return l.session, nil
	}
	return "proxy-" + randomID(), nil
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// unlinkWhenDone closes a link's upstream session when its host session
// ends (an HTTP host that went away, a stdio host that closed stdin).
func (p *Proxy) unlinkWhenDone(ss *mcp.ServerSession, l *link) {
	_ = ss.Wait() // how the host session ended does not matter here
	p.mu.Lock()
	if p.links[ss] == l {
		delete(p.links, ss)
	}
	p.mu.Unlock()
	if err := l.close(); err != nil {
		p.log.Debug("closing the upstream session of a finished host session", "err", err)
	}
}

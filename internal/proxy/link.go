package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
)

// link pairs one host session with its upstream session, wrapped in the
// ledger client. Whatever the upstream sends on its own (requests,
// notifications) goes to this link's host session.
type link struct {
	p *Proxy
	// ready is closed once the link is usable or err is set; err does not
	// change afterwards.
	ready chan struct{}
	err   error

	// mu guards the fields below.
	mu     sync.Mutex
	client *client.Client
	host   *mcp.ServerSession
	// pending is a session opened before the ledger client existed (New
	// opens one to learn the upstream); the client's first dial takes it.
	pending *mcp.ClientSession
	closed  bool
	// subs and level are what the host asked of the upstream session
	// (resources/subscribe, logging/setLevel); a session that replaces a
	// dead one is asked the same.
	subs  map[string]bool
	level mcp.LoggingLevel
}

func newLink(p *Proxy) *link {
	return &link{p: p, ready: make(chan struct{})}
}

func (l *link) bind(ss *mcp.ServerSession) {
	l.mu.Lock()
	l.host = ss
	l.mu.Unlock()
}

// hostSession is the host session the upstream's messages go to; nil
// before a host connected.
func (l *link) hostSession() *mcp.ServerSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.host
}

// dial is the ledger client's connect function: a pending session first,
// then a new upstream session with this link's relay handlers.
func (l *link) dial(ctx context.Context) (*mcp.ClientSession, error) {
	l.mu.Lock()
	s := l.pending
	l.pending = nil
	l.mu.Unlock()
	if s != nil {
		return s, nil
	}
	t, err := l.p.opts.Transport(ctx)
	if err != nil {
		return nil, err
	}
	impl := &mcp.Implementation{Name: l.p.opts.Name, Version: l.p.opts.Version}
	s, err = mcp.NewClient(impl, l.clientOptions()).Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: upstreamVersion})
	if err != nil {
		return nil, err
	}
	// Not here: the ledger client holds its lock while it dials, and a
	// notification handler on the new session may need that lock before
	// the session reads these requests' answers.
	go l.restore(s)
	return s, nil
}

// restore asks a new upstream session for the log level and the resource
// subscriptions the host asked of the sessions before it.
func (l *link) restore(s *mcp.ClientSession) {
	l.mu.Lock()
	level, subs := l.level, slices.Sorted(maps.Keys(l.subs))
	l.mu.Unlock()
	if level == "" && len(subs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
	defer cancel()
	if level != "" {
		if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			l.p.log.Warn("setting the log level on a new upstream session", "level", level, "err", err)
		}
	}
	for _, uri := range subs {
		if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			l.p.log.Warn("subscribing a new upstream session", "uri", uri, "err", err)
		}
	}
}

// restoreTimeout bounds restore.
const restoreTimeout = 30 * time.Second

// subscribed remembers that the host subscribed to uri (on) or
// unsubscribed from it.
func (l *link) subscribed(uri string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !on {
		delete(l.subs, uri)
		return
	}
	if l.subs == nil {
		l.subs = map[string]bool{}
	}
	l.subs[uri] = true
}

// setLevel remembers the log level the host set.
func (l *link) setLevel(level mcp.LoggingLevel) {
	l.mu.Lock()
	l.level = level
	l.mu.Unlock()
}

// ledger is the link's ledger client; nil while it connects.
func (l *link) ledger() *client.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.client
}

// setClient installs the ledger client, or closes it when the link was
// closed while it connected.
func (l *link) setClient(c *client.Client) error {
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.client = c
	}
	l.mu.Unlock()
	if closed {
		return errors.Join(errors.New("proxy: closed"), c.Close())
	}
	return nil
}

// close closes the upstream session. It is safe to call more than once.
func (l *link) close() error {
	l.mu.Lock()
	s, c := l.pending, l.client
	l.pending, l.client, l.closed = nil, nil, true
	l.mu.Unlock()
	var errs []error
	if s != nil {
		errs = append(errs, s.Close())
	}
	if c != nil {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// clientOptions are the upstream client's options: each handler relays to
// this link's host session. The capabilities offered are fixed, because
// the first upstream session is opened before any host connects: sampling
// and elicitation (form and URL) are offered, and a request the host
// turns out not to support is answered with an error naming what is
// missing. Roots are not offered (see the package doc).
func (l *link) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Logger: l.p.log,
		Capabilities: &mcp.ClientCapabilities{
			Sampling:    &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
		CreateMessageWithToolsHandler: l.sampling,
		ElicitationHandler:            l.elicitation,
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			l.notify(ctx, "notifications/elicitation/complete", orEmpty(req.Params))
		},
		// Notification handlers run on the upstream session's read loop:
		// they must not wait for anything that needs that loop, so the
		// tool list is fetched by the refresher, not here.
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			if c := l.ledger(); c != nil {
				c.ToolListChanged(ctx, req)
			}
			l.p.requestRefresh(l)
		},
		PromptListChangedHandler: func(ctx context.Context, req *mcp.PromptListChangedRequest) {
			l.notify(ctx, "notifications/prompts/list_changed", orEmpty(req.Params))
		},
		ResourceListChangedHandler: func(ctx context.Context, req *mcp.ResourceListChangedRequest) {
			l.notify(ctx, "notifications/resources/list_changed", orEmpty(req.Params))
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			l.notify(ctx, "notifications/resources/updated", orEmpty(req.Params))
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			l.notify(ctx, "notifications/message", orEmpty(req.Params))
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			l.notify(ctx, "notifications/progress", orEmpty(req.Params))
		},
	}
}

// notify relays a notification to the host session unchanged. A
// notification that arrives before any host connected has no one to go to
// and is dropped, as the upstream would have seen with no client at all.
func (l *link) notify(ctx context.Context, method string, params mcp.Params) {
	ss := l.hostSession()
	if ss == nil {
		l.p.log.Debug("upstream notification before a host connected; dropped", "method", method)
		return
	}
	if err := l.p.sendHost(ctx, ss, method, params); err != nil {
		l.p.log.Warn("relaying a notification to the host", "method", method, "err", err)
	}
}

// errNoHost answers an upstream request that no host can see.
var errNoHost = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpledger proxy: no host session is connected to answer this request"}

func (l *link) elicitation(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ss := l.hostSession()
	if ss == nil {
		return nil, errNoHost
	}
	caps := hostCapabilities(ss)
	if caps == nil || caps.Elicitation == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "mcpledger proxy: the host does not support elicitation"}
	}
	res, err := l.p.hostSend(ctx, "elicitation/create", &mcp.ServerRequest[*mcp.ElicitParams]{Session: ss, Params: req.Params})
	if err != nil {
		return nil, err
	}
	er, ok := res.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("proxy: elicitation/create answered with %T", res)
	}
	return er, nil
}

func (l *link) sampling(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	ss := l.hostSession()
	if ss == nil {
		return nil, errNoHost
	}
	caps := hostCapabilities(ss)
	if caps == nil || caps.Sampling == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "mcpledger proxy: the host does not support sampling"}
	}
	res, err := l.p.hostSend(ctx, "sampling/createMessage", &mcp.ServerRequest[*mcp.CreateMessageWithToolsParams]{Session: ss, Params: req.Params})
	if err != nil {
		return nil, err
	}
	sr, ok := res.(*mcp.CreateMessageWithToolsResult)
	if !ok {
		return nil, fmt.Errorf("proxy: sampling/createMessage answered with %T", res)
	}
	return sr, nil
}

// hostCapabilities are what the host declared at initialize.
func hostCapabilities(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	ip := ss.InitializeParams()
	if ip == nil {
		return nil
	}
	return ip.Capabilities
}

// orEmpty keeps a notification without params from being relayed with
// "params": null, which a strict host may reject.
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

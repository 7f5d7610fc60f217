//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
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
	// order counts the upstream's notifications, read and relayed; it
	// has a lock of its own.
	order order
	// ready is closed once the link is usable or err is set; err does not
	// change afterwards.
	ready chan struct{}
	err   error
	// session is the ledger session of the host session; set by bind,
	// before the link is shared.
	session string

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
	// calls are the host's requests in flight on this link, oldest first:
	// what the upstream sends while it serves one of them belongs with it.
	calls []*hostCall
}

// hostCall is a host request the proxy is serving with the upstream.
type hostCall struct {
	// ctx is the host request's own context. The SDK's streamable HTTP
	// transport sends a message on the stream of the request whose
	// context it is sent with, so relaying with ctx's values puts the
	// upstream's log lines, progress and questions on the stream of the
	// host request they belong to.
	ctx context.Context
	// token is the host's progress token, nil when it sent none. The
	// proxy passes it to the upstream unchanged, so the upstream's
	// progress names the host request exactly.
	token any
}

func newLink(p *Proxy) *link {
	return &link{p: p, ready: make(chan struct{})}
}

// bind gives the link its host session and that session's ledger session.
func (l *link) bind(ss *mcp.ServerSession, session string) {
	l.mu.Lock()
	l.host = ss
	l.session = session
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
	t = l.order.counted(t)
	// The SDK hands the values of the context a session was connected with
	// to every handler of that session, for as long as it lives. The
	// context here is a host request's (the one that needed the session),
	// and among its values is that request's place on the host's
	// transport: relayed with it, the upstream's messages would go to a
	// request long finished. So the session gets the cancellation of ctx,
	// for the handshake, and of values only its link, by which the
	// proxy's one upstream client (see Proxy.upstreamClient) finds where
	// this session's messages go.
	s, err = l.p.up.Connect(sessionContext{ctx, l}, t, &mcp.ClientSessionOptions{ProtocolVersion: upstreamVersion})
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

// upstream is the link's upstream session: the ledger client's, or the
// one New opened before any host connected; nil when closed.
func (l *link) upstream() *mcp.ClientSession {
	l.mu.Lock()
	c, s := l.client, l.pending
	l.mu.Unlock()
	if c != nil {
		return c.Session()
	}
	return s
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

// upstreamClient is the client of every upstream session: one for the
// proxy rather than one per host session (each go-sdk client keeps a table
// of its methods, some 6 KB). Its handlers relay to the host session of
// the link they find in their context (see link.dial). The capabilities
// offered are fixed, because the first upstream session is opened before
// any host connects: sampling and elicitation (form and URL) are offered,
// and a request the host turns out not to support is answered with an
// error naming what is missing. Roots are not offered (see the package
// doc).
func (p *Proxy) upstreamClient() *mcp.Client {
	notify := func(method string) func(ctx context.Context, params mcp.Params) {
		return func(ctx context.Context, params mcp.Params) {
			if l := linkOf(ctx); l != nil {
				l.notify(ctx, method, params)
			}
		}
	}
	elicitComplete := notify("notifications/elicitation/complete")
	promptsChanged := notify("notifications/prompts/list_changed")
	resourcesChanged := notify("notifications/resources/list_changed")
	updated := notify("notifications/resources/updated")
	logged := notify("notifications/message")
	progress := notify("notifications/progress")
	impl := &mcp.Implementation{Name: p.opts.Name, Version: p.opts.Version}
	c := mcp.NewClient(impl, &mcp.ClientOptions{
		Logger: p.log,
		Capabilities: &mcp.ClientCapabilities{
			Sampling:    &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
		CreateMessageWithToolsHandler: func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			l := linkOf(ctx)
			if l == nil {
				return nil, errNoHost
			}
			return l.sampling(ctx, req)
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			l := linkOf(ctx)
			if l == nil {
				return nil, errNoHost
			}
			return l.elicitation(ctx, req)
		},
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			elicitComplete(ctx, orEmpty(req.Params))
		},
		// Notification handlers run on the upstream session's read loop:
		// they must not wait for anything that needs that loop, so the
		// tool list is fetched by the refresher, not here.
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			l := linkOf(ctx)
			if l == nil {
				return
			}
			if c := l.ledger(); c != nil {
				c.ToolListChanged(ctx, req)
			}
			p.requestRefresh(l)
		},
		PromptListChangedHandler: func(ctx context.Context, req *mcp.PromptListChangedRequest) {
			promptsChanged(ctx, orEmpty(req.Params))
		},
		ResourceListChangedHandler: func(ctx context.Context, req *mcp.ResourceListChangedRequest) {
			resourcesChanged(ctx, orEmpty(req.Params))
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated(ctx, orEmpty(req.Params))
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			logged(ctx, orEmpty(req.Params))
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress(ctx, orEmpty(req.Params))
		},
	})
	c.AddReceivingMiddleware(verbatim)
	c.AddReceivingMiddleware(codedErrors)
	return c
}

// notify relays a notification to the host session unchanged, with the
// host request it belongs to (see related). A notification that arrives
// before any host connected has no one to go to and is dropped, as the
// upstream would have seen with no client at all.
func (l *link) notify(ctx context.Context, method string, params mcp.Params) {
	ss := l.hostSession()
	if ss == nil {
		l.p.log.Debug("upstream notification before a host connected; dropped", "method", method)
		return
	}
	var token any
	if pp, ok := params.(*mcp.ProgressNotificationParams); ok {
		token = pp.ProgressToken
	}
	if rel := l.related(token); rel != nil {
		err := l.p.sendHost(relatedContext{ctx, rel}, ss, method, params)
		if err == nil || !rejected(err) {
			l.logRelay(method, err)
			return
		}
		// The host request ended just now and its stream with it: the
		// message goes where one outside any request goes.
	}
	l.logRelay(method, l.p.sendHost(ctx, ss, method, params))
}

func (l *link) logRelay(method string, err error) {
	switch {
	case err == nil:
	case rejected(err):
		// A host without a stream for messages outside its requests (no
		// GET stream over HTTP) cannot get this one, from us or from the
		// upstream itself.
		l.p.log.Debug("relaying a notification to the host: no stream to carry it", "method", method, "err", err)
	default:
		l.p.log.Warn("relaying a notification to the host", "method", method, "err", err)
	}
}

// rejected reports whether the host's transport refused a message without
// breaking the session (a stream that is closed, or none).
func rejected(err error) bool {
	return errors.Is(err, &jsonrpc.Error{Code: codeRejected})
}

// codeRejected is the SDK's "rejected by transport" code.
const codeRejected = -32005

// begin records the host request ctx as in flight on this link until end
// is called: the upstream's messages meanwhile belong with it.
func (l *link) begin(ctx context.Context, params mcp.Params) (end func()) {
	c := &hostCall{ctx: ctx, token: progressToken(params)}
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.calls = slices.DeleteFunc(l.calls, func(x *hostCall) bool { return x == c })
		l.mu.Unlock()
	}
}

// related is the context of the host request a message from the upstream
// belongs to, nil when none is in flight. A progress token names its
// request; anything else (log lines, questions) belongs to the request in
// flight, and when several are, to the latest: the upstream's transport
// does not say which of its requests a message came with, so a host that
// runs calls in parallel on one session may see a log line with a sibling
// call. It stays within the host session either way.
func (l *link) related(token any) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if token != nil {
		for _, c := range l.calls {
			if sameToken(c.token, token) {
				return c.ctx
			}
		}
	}
	if n := len(l.calls); n > 0 {
		return l.calls[n-1].ctx
	}
	return nil
}

// progressToken is the progress token of a request's params, nil when it
// has none (or no params: a request without params comes as a typed nil).
func progressToken(params mcp.Params) any {
	rp, ok := params.(mcp.RequestParams)
	if !ok || rp == nil || reflect.ValueOf(rp).IsNil() {
		return nil
	}
	return rp.GetProgressToken()
}

// sameToken compares progress tokens, strings or JSON numbers; the host's
// is decoded as the upstream's is, so equal tokens have equal types.
func sameToken(a, b any) bool {
	switch a.(type) {
	case string, float64, int, int64, json.Number:
		return a == b
	}
	return false
}

// relatedContext is the upstream request's context (its cancellation) with
// the values of the host request it belongs to (its place on the host's
// transport).
type relatedContext struct {
	context.Context
	host context.Context
}

func (c relatedContext) Value(key any) any { return c.host.Value(key) }

// sessionContext is a context's cancellation and deadline with one value:
// the link of the upstream session connected with it, under linkKey.
type sessionContext struct {
	context.Context
	l *link
}

type linkKey struct{}

func (c sessionContext) Value(key any) any {
	if key == (linkKey{}) {
		return c.l
	}
	return nil
}

// linkOf is the link of the upstream session whose handler has ctx; nil
// for a context of no upstream session.
func linkOf(ctx context.Context) *link {
	l, _ := ctx.Value(linkKey{}).(*link)
	return l
}

// errNoHost answers an upstream request that no host can see.
var errNoHost = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpledger proxy: no host session is connected to answer this request"}

// verbatim counts the notifications relayed (see order) and answers the
// upstream's elicitation requests itself, ahead of the
// SDK's client, which checks a requested schema against the forms it knows
// (and refuses, for one, a multi-select of titled options whose items say
// "type": "string" next to "anyOf") and fills the schema's defaults into
// the answer. The host is the client the upstream is really asking: it gets
// the request as sent and the upstream gets the host's answer as given.
func verbatim(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		l := linkOf(ctx)
		if l == nil {
			return next(ctx, method, req)
		}
		if er, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" {
			return l.elicitation(ctx, er)
		}
		if relayed[method] {
			defer l.order.done()
		}
		return next(ctx, method, req)
	}
}

func (l *link) elicitation(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ss := l.hostSession()
	if ss == nil {
		return nil, errNoHost
	}
	caps := hostCapabilities(ss)
	if caps == nil || caps.Elicitation == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "mcpledger proxy: the host does not support elicitation"}
	}
	res, err := l.askHost(ctx, ss, "elicitation/create", &mcp.ServerRequest[*mcp.ElicitParams]{Session: ss, Params: orEmpty(req.Params)})
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
	res, err := l.askHost(ctx, ss, "sampling/createMessage", &mcp.ServerRequest[*mcp.CreateMessageWithToolsParams]{Session: ss, Params: req.Params})
	if err != nil {
		return nil, err
	}
	sr, ok := res.(*mcp.CreateMessageWithToolsResult)
	if !ok {
		return nil, fmt.Errorf("proxy: sampling/createMessage answered with %T", res)
	}
	return sr, nil
}

// askHost sends the upstream's request to the host, on the stream of the
// host request it belongs to when one is in flight.
func (l *link) askHost(ctx context.Context, ss *mcp.ServerSession, method string, req mcp.Request) (mcp.Result, error) {
	if rel := l.related(progressToken(req.GetParams())); rel != nil {
		res, err := l.p.hostSend(relatedContext{ctx, rel}, method, req)
		if err == nil || !rejected(err) {
			return res, err
		}
	}
	return l.p.hostSend(ctx, method, req)
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

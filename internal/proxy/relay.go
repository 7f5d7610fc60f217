//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package proxy

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
)

// relayMiddleware answers the host's resource and prompt requests from the
// upstream and forwards logging/setLevel. Everything else (initialize,
// ping, the tools, and the methods the server options route to the
// upstream) goes on to the SDK's own handling.
func (p *Proxy) relayMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p.requests.Add(1) // the releaser's sign of a burst
		switch method {
		case "resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get", "logging/setLevel":
		default:
			return next(ctx, method, req)
		}
		// Each typed call keeps what the SDK does per protocol version
		// for the upstream; the host's params pass through as they came.
		var res mcp.Result
		l, err := p.onUpstream(ctx, req.GetSession(), req.GetParams(), func(ctx context.Context, cs *mcp.ClientSession) error {
			var err error
			switch params := req.GetParams().(type) {
			case *mcp.ListResourcesParams:
				res, err = cs.ListResources(ctx, params)
			case *mcp.ListResourceTemplatesParams:
				res, err = cs.ListResourceTemplates(ctx, params)
			case *mcp.ReadResourceParams:
				res, err = cs.ReadResource(ctx, params)
			case *mcp.ListPromptsParams:
				res, err = cs.ListPrompts(ctx, params)
			case *mcp.GetPromptParams:
				res, err = cs.GetPrompt(ctx, params)
			case *mcp.SetLoggingLevelParams:
				// The upstream filters its log messages by the level; the
				// proxy's own session keeps it too, for its own messages.
				err = cs.SetLoggingLevel(ctx, params)
			default:
				err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpledger proxy: unexpected params %T for %s", req.GetParams(), method)}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if params, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
			l.setLevel(params.Level)
			return next(ctx, method, req)
		}
		return res, nil
	}
}

// onUpstream runs fn, a request safe to send twice, on the upstream
// session of the host session s; when that session turns out to be gone
// (the upstream died), on a new one, so that a host reading resources or
// prompts need not wait for a tool call to bring the upstream back. What
// the upstream sends meanwhile goes with the host's request (params).
func (p *Proxy) onUpstream(ctx context.Context, s mcp.Session, params mcp.Params, fn func(context.Context, *mcp.ClientSession) error) (*link, error) {
	l, c, err := p.ledgerFor(ctx, s)
	if err != nil {
		return nil, err
	}
	defer l.begin(ctx, params)()
	err = c.Repeatable(ctx, fn)
	l.order.settle(ctx)
	return l, err
}

// upstreamFor is the upstream session of the host session s, as it is.
func (p *Proxy) upstreamFor(ctx context.Context, s mcp.Session) (*mcp.ClientSession, error) {
	_, c, err := p.ledgerFor(ctx, s)
	if err != nil {
		return nil, err
	}
	cs := c.Session()
	if cs == nil {
		return nil, fmt.Errorf("proxy: the upstream session is closed: %w", mcp.ErrConnectionClosed)
	}
	return cs, nil
}

// ledgerFor is the link of the host session s and its ledger client.
func (p *Proxy) ledgerFor(ctx context.Context, s mcp.Session) (*link, *client.Client, error) {
	ss, ok := s.(*mcp.ServerSession)
	if !ok {
		return nil, nil, fmt.Errorf("proxy: request from a %T, want a host session", s)
	}
	l, err := p.linkFor(ctx, ss)
	if err != nil {
		return nil, nil, err
	}
	c := l.ledger()
	if c == nil {
		return nil, nil, fmt.Errorf("proxy: %w", mcp.ErrConnectionClosed)
	}
	return l, c, nil
}

func (p *Proxy) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	var res *mcp.CompleteResult
	_, err := p.onUpstream(ctx, req.Session, req.Params, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.Complete(ctx, req.Params)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// subscribe and unsubscribe forward to the upstream; the SDK keeps the
// host's subscription too, and the upstream's resources/updated reaches the
// host through the link.
func (p *Proxy) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	l, err := p.onUpstream(ctx, req.Session, req.Params, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Subscribe(ctx, req.Params)
	})
	if err != nil {
		return err
	}
	l.subscribed(req.Params.URI, true)
	return nil
}

func (p *Proxy) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	l, err := p.onUpstream(ctx, req.Session, req.Params, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, req.Params)
	})
	if err != nil {
		return err
	}
	l.subscribed(req.Params.URI, false)
	return nil
}

// hostProgress relays the host's progress on a request the upstream sent
// it (sampling, elicitation); the token is the upstream's own.
func (p *Proxy) hostProgress(ctx context.Context, req *mcp.ProgressNotificationServerRequest) {
	cs, err := p.upstreamFor(ctx, req.Session)
	if err != nil {
		p.log.Warn("relaying the host's progress", "err", err)
		return
	}
	if err := cs.NotifyProgress(ctx, req.Params); err != nil {
		p.log.Warn("relaying the host's progress", "err", err)
	}
}

// sendHost sends method to the host session ss with params, unchanged.
func (p *Proxy) sendHost(ctx context.Context, ss *mcp.ServerSession, method string, params mcp.Params) error {
	_, err := p.hostSend(ctx, method, &mcp.ServerRequest[mcp.Params]{Session: ss, Params: params})
	return err
}

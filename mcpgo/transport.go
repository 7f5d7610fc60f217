package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/retry"
)

// Transport wraps an mcp-go client transport so a Client sees what
// mcp-go's client does not pass on: the code and data of a JSON-RPC error
// (mcp-go keeps only the message of codes it does not know, such as the
// -3100x errors of a key-aware server), and a result's bytes as the server
// sent them. Make the mcp-go client with it:
//
//	c := client.NewClient(mcpgo.Transport(transport.NewStdio("server", nil)))
//
// Everything else passes through: notifications, requests from the server
// (sampling, elicitation), the HTTP protocol version, connection-lost
// handlers.
func Transport(t transport.Interface) transport.Interface {
	w := &wrapped{inner: t}
	if _, ok := t.(transport.HTTPConnection); ok {
		return &wrappedHTTP{w}
	}
	return w
}

// wrapped is a transport that records the raw response of tools/call
// requests made with a sink in their context.
type wrapped struct {
	inner transport.Interface
	// closed: a request already found the transport closed. mcp-go
	// answers ErrTransportClosed both for a request whose connection
	// closed after it was written and for one it never wrote because the
	// connection was gone before; only the second is provably not sent.
	closed atomic.Bool
}

// sink receives the raw response of one attempt.
type sink struct {
	result json.RawMessage
	rpcErr *mcp.JSONRPCErrorDetails
}

type sinkKey struct{}

func withSink(ctx context.Context, s *sink) context.Context {
	return context.WithValue(ctx, sinkKey{}, s)
}

func (w *wrapped) Start(ctx context.Context) error { return w.inner.Start(ctx) }

func (w *wrapped) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	wasClosed := w.closed.Load()
	resp, err := w.inner.SendRequest(ctx, req)
	switch {
	case errors.Is(err, transport.ErrTransportClosed):
		w.closed.Store(true)
		if wasClosed {
			err = retry.Wrap(err, retry.ErrConnectionClosed)
		}
	case errors.Is(err, transport.ErrSessionTerminated):
		// The server no longer knows the session and handled nothing.
		err = retry.Wrap(err, retry.ErrSessionMissing)
	}
	if s, ok := ctx.Value(sinkKey{}).(*sink); ok && resp != nil && req.Method == string(mcp.MethodToolsCall) {
		if resp.Error != nil {
			d := *resp.Error
			s.rpcErr = &d
		} else {
			s.result = append(json.RawMessage(nil), resp.Result...)
		}
	}
	return resp, err
}

func (w *wrapped) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return w.inner.SendNotification(ctx, n)
}

func (w *wrapped) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	w.inner.SetNotificationHandler(h)
}

func (w *wrapped) Close() error         { return w.inner.Close() }
func (w *wrapped) GetSessionId() string { return w.inner.GetSessionId() }

// SetRequestHandler passes requests from the server on when the inner
// transport carries them.
func (w *wrapped) SetRequestHandler(h transport.RequestHandler) {
	if b, ok := w.inner.(transport.BidirectionalInterface); ok {
		b.SetRequestHandler(h)
	}
}

// SetConnectionLostHandler passes the handler on when the inner transport
// takes one.
func (w *wrapped) SetConnectionLostHandler(h func(error)) {
	if s, ok := w.inner.(interface{ SetConnectionLostHandler(func(error)) }); ok {
		s.SetConnectionLostHandler(h)
	}
}

// RequiresLegacyProtocol answers as the inner transport does.
func (w *wrapped) RequiresLegacyProtocol() bool {
	l, ok := w.inner.(interface{ RequiresLegacyProtocol() bool })
	return ok && l.RequiresLegacyProtocol()
}

// wrappedHTTP is wrapped over an HTTP transport, which mcp-go's client
// tells apart by its SetProtocolVersion.
type wrappedHTTP struct{ *wrapped }

func (w *wrappedHTTP) SetProtocolVersion(v string) {
	w.inner.(transport.HTTPConnection).SetProtocolVersion(v)
}

var (
	_ transport.BidirectionalInterface = (*wrapped)(nil)
	_ transport.HTTPConnection         = (*wrappedHTTP)(nil)
)

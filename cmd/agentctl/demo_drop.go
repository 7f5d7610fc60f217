package main

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// losingTransport loses the answer to the first tools/call sent through
// it, the way a network does: the server receives the call and runs it,
// and its answer never arrives, because the connection breaks first.
type losingTransport struct {
	mcp.Transport
	armed *atomic.Bool // shared by the step's connections: lose one answer in all
}

func (t *losingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &losingConn{Connection: c, armed: t.armed}, nil
}

type losingConn struct {
	mcp.Connection
	armed *atomic.Bool

	mu     sync.Mutex // guards target
	target jsonrpc.ID // the tools/call whose answer is lost
	lose   bool
}

func (c *losingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.IsCall() && c.armed.CompareAndSwap(true, false) {
		c.mu.Lock()
		c.target, c.lose = req.ID, true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, m)
}

func (c *losingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err != nil {
		return m, err
	}
	if resp, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		lost := c.lose && resp.ID == c.target
		c.mu.Unlock()
		if lost {
			// The answer came back after the server ran the call; it is
			// dropped and the connection ends, as if the network broke.
			return nil, io.ErrUnexpectedEOF
		}
	}
	return m, nil
}

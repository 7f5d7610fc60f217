package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK hands a response to its caller as soon as it is read, and the
// notifications read before it to a queue that handlers drain in order.
// The upstream's last log line of a call, read before the call's result,
// can so be relayed after the proxy answered the host, when the host
// request's stream is gone. The proxy therefore counts the notifications
// it reads from the upstream (order) and those its handlers have relayed,
// and answers the host only once the second count has caught up with what
// the first was when the upstream answered.

// relayed are the notifications the link's handlers relay; the SDK hands
// each to a handler in the order read. Others (cancellation, methods the
// proxy does not know) never reach one and are not counted.
var relayed = map[string]bool{
	"notifications/message":                true,
	"notifications/progress":               true,
	"notifications/resources/updated":      true,
	"notifications/resources/list_changed": true,
	"notifications/prompts/list_changed":   true,
	"notifications/tools/list_changed":     true,
	"notifications/elicitation/complete":   true,
}

// order counts the relayed notifications of one link: read from the
// upstream, and handled.
type order struct {
	read atomic.Int64

	// mu guards handled and moved.
	mu      sync.Mutex
	handled int64
	moved   chan struct{} // closed and replaced at each handled notification
}

// settleTimeout bounds the wait for the handlers. Past it the counts are
// taken as equal again: a notification the SDK refused (bad params) is
// counted as read but never handled, and must not slow every later call.
const settleTimeout = time.Second

func (o *order) done() {
	o.mu.Lock()
	o.handled++
	if o.moved != nil {
		close(o.moved)
		o.moved = nil
	}
	o.mu.Unlock()
}

// settle waits until every relayed notification read so far has been
// handled.
func (o *order) settle(ctx context.Context) {
	target := o.read.Load()
	var timeout <-chan time.Time
	for {
		o.mu.Lock()
		if o.handled >= target {
			o.mu.Unlock()
			return
		}
		if o.moved == nil {
			o.moved = make(chan struct{})
		}
		moved := o.moved
		o.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(settleTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return
		case <-timeout:
			o.mu.Lock()
			o.handled = max(o.handled, target)
			o.mu.Unlock()
			return
		}
	}
}

// counted returns t with the link's notifications counted as they are
// read. A streamable HTTP transport is counted on its event streams: its
// connection has methods of the SDK's own that a wrapper would hide.
// Any other transport's connection is wrapped.
func (o *order) counted(t mcp.Transport) mcp.Transport {
	st, ok := t.(*mcp.StreamableClientTransport)
	if !ok {
		return &countingTransport{Transport: t, o: o}
	}
	cp := *st
	hc := http.Client{}
	if st.HTTPClient != nil {
		hc = *st.HTTPClient
	}
	rt := hc.Transport
	if rt == nil {
		rt = UpstreamTransport
	}
	hc.Transport = &countingRoundTripper{next: rt, o: o}
	cp.HTTPClient = &hc
	return &cp
}

type countingTransport struct {
	mcp.Transport
	o *order
}

func (t *countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Connection: c, o: t.o}, nil
}

type countingConn struct {
	mcp.Connection
	o *order
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() && relayed[r.Method] {
		c.o.read.Add(1)
	}
	return m, err
}

type countingRoundTripper struct {
	next http.RoundTripper
	o    *order
}

func (rt *countingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err == nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &sseCounter{ReadCloser: resp.Body, o: rt.o}
	}
	return resp, err
}

// sseCounter counts the relayed notifications in an event stream as the
// SDK reads it: each before the SDK sees the bytes that follow it.
type sseCounter struct {
	io.ReadCloser
	o    *order
	line []byte // the line read so far
	data []byte // the data of the event read so far
}

func (s *sseCounter) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.line = append(s.line, b...)
			break
		}
		s.line = append(s.line, b[:i]...)
		s.endLine()
		b = b[i+1:]
	}
	return n, err
}

func (s *sseCounter) endLine() {
	line := bytes.TrimSuffix(s.line, []byte("\r"))
	s.line = s.line[:0]
	if len(line) == 0 {
		if len(s.data) > 0 && notification(s.data) {
			s.o.read.Add(1)
		}
		s.data = s.data[:0]
		return
	}
	if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, bytes.TrimPrefix(d, []byte(" "))...)
	}
}

// notification reports whether data is a relayed notification. Most
// events are answers to calls, which have no "method" key: they are told
// apart without decoding the whole result.
func notification(data []byte) bool {
	if !bytes.Contains(data, []byte(`"method"`)) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(data, &m) == nil && m.ID == nil && relayed[m.Method]
}

package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestIDHeader ties a tool call, as the handler sees it (req.Extra.Header),
// to the HTTP request carrying it, so a fault can change that request's
// answer. The HTTP layer sets it; clients never do.
const requestIDHeader = "Mcptest-Request-Id"

// sessionIDHeader is the streamable HTTP session header (go-sdk keeps its
// name unexported).
const sessionIDHeader = "Mcp-Session-Id"

// Handler serves s over streamable HTTP (stateful sessions) and applies the
// HTTP faults: HTTPStatus, HTTPStatusAfterExecute, and DropAfterExecute or
// ExitAfterCommit, which drop the TCP connection of the request after the
// call executed.
func (s *Server) Handler() http.Handler {
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
	var seq atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			// The client ends its session; go-sdk's close waits for
			// in-flight handlers, so let stalled calls go first.
			s.releaseStalls(r.Header.Get(sessionIDHeader), false)
		}
		if r.Method != http.MethodPost {
			inner.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "mcptest: read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !isToolCall(body) {
			inner.ServeHTTP(w, r)
			return
		}

		id := strconv.FormatInt(seq.Add(1), 10)
		r.Header.Set(requestIDHeader, id)
		// Hold the answer back until the call is over, so that a fault can
		// still replace it or drop the connection instead.
		buf := &bufferedWriter{header: http.Header{}}
		inner.ServeHTTP(buf, r)
		f, faulted := s.takeOutcome(id)
		switch {
		case !faulted:
			buf.copyTo(w)
		case f.Kind == KindHTTPStatus:
			http.Error(w, http.StatusText(f.Status), f.Status)
		default: // DropAfterExecute, ExitAfterCommit
			dropConnection(w)
		}
	})
}

// isToolCall reports whether body is a single JSON-RPC tools/call request.
func isToolCall(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		// A batch or not JSON: not ours to fault; the SDK answers it.
		return false
	}
	return msg.Method == "tools/call"
}

// dropConnection closes the request's TCP connection with no response.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the handler, which makes the
		// server reset the stream without a response.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close() // dropping it is the fault; nothing waits for how it went
}

// bufferedWriter records a response for later copying.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// Flush is a no-op: everything goes out after the handler returns.
func (b *bufferedWriter) Flush() {}

func (b *bufferedWriter) copyTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	if b.status == 0 {
		b.status = http.StatusOK
	}
	w.WriteHeader(b.status)
	// The client may be gone; nothing to do about a failed write here.
	if _, err := w.Write(b.body.Bytes()); err != nil {
		return
	}
}

// ServeHTTP serves s on 127.0.0.1 and returns the MCP endpoint URL; the
// server is closed in t.Cleanup.
func ServeHTTP(t testing.TB, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		// Close waits for requests in flight: end stalled calls, and cut
		// standalone SSE streams, which stay open until their client leaves.
		s.releaseStalls("", true)
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}

// RefusedURL returns an http://127.0.0.1 URL nobody listens on: the port was
// bound and released, so dialing it is refused.
func RefusedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mcptest: listen: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("mcptest: close listener: %v", err)
	}
	return "http://" + addr
}

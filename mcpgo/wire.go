package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/guard"
)

// mcp-go sends every error a tool handler or middleware returns as
// -32603 with the error's text: a middleware cannot choose the code or the
// data. The Guard's refusals must go out as the -3100x errors of the wire
// conventions (clients retry and record by them), so Handler and
// ServeStdio put them back on the way out: the middleware leaves each
// refusal in a book carried by the request's context, and the response
// writer puts the refusal's code and data on the -32603 error that carries
// its text. mcp-go writes each response with one Write (JSON, or one SSE
// event, or one stdio line), so a response is rewritten whole.

// codeInternal is JSON-RPC's internal error, mcp-go's code for every
// handler error.
const codeInternal = -32603

// book holds the refusals of the requests in flight under one context, by
// message (the text mcp-go sends). Equal texts are equal refusals.
type book struct {
	mu sync.Mutex // guards m
	m  map[string]*guard.Refusal
}

func (b *book) put(r *guard.Refusal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]*guard.Refusal)
	}
	b.m[r.Message] = r
}

func (b *book) take(msg string) (*guard.Refusal, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.m[msg]
	if ok {
		delete(b.m, msg)
	}
	return r, ok
}

type bookKey struct{}

func withBook(ctx context.Context, b *book) context.Context {
	return context.WithValue(ctx, bookKey{}, b)
}

// refuse returns err to mcp-go, noting a refusal in the request's book so
// it leaves with its own code.
func refuse(ctx context.Context, err error) error {
	var r *guard.Refusal
	if b, ok := ctx.Value(bookKey{}).(*book); ok && errors.As(err, &r) {
		b.put(r)
	}
	return err
}

// rewrite returns msg (one JSON-RPC message, alone or as an SSE event)
// with a booked refusal's code and data in place of mcp-go's -32603.
func (b *book) rewrite(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"error"`)) {
		return msg
	}
	start := bytes.IndexByte(msg, '{')
	end := bytes.LastIndexByte(msg, '}')
	if start < 0 || end < start {
		return msg
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg[start:end+1], &m); err != nil || m.Error == nil || m.Error.Code != codeInternal {
		return msg
	}
	r, ok := b.take(m.Error.Message)
	if !ok {
		return msg
	}
	type rpcError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	e := rpcError{Code: r.Code, Message: r.Message}
	if r.Data != nil {
		e.Data = r.Data
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{m.JSONRPC, m.ID, e})
	if err != nil {
		return msg
	}
	out := make([]byte, 0, len(msg)+len(body))
	out = append(out, msg[:start]...)
	out = append(out, body...)
	return append(out, msg[end+1:]...)
}

// Handler wraps mcp-go's streamable HTTP server (or any handler serving
// an MCP server guarded by g) so the Guard's refusals leave as the -3100x
// errors, with their data:
//
//	http.Handle("/mcp", g.Handler(server.NewStreamableHTTPServer(s)))
func (g *Guard) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := new(book)
		h.ServeHTTP(&bookWriter{ResponseWriter: w, book: b}, r.WithContext(withBook(r.Context(), b)))
	})
}

// bookWriter rewrites each response write of one HTTP request.
type bookWriter struct {
	http.ResponseWriter
	book *book
}

func (w *bookWriter) Write(p []byte) (int, error) {
	out := w.book.rewrite(p)
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush keeps SSE responses streaming.
func (w *bookWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *bookWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeStdio serves s over in and out (os.Stdin and os.Stdout for a
// child process) until ctx ends or in closes, with the Guard's refusals
// sent as the -3100x errors. opts are mcp-go's stdio options.
func (g *Guard) ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, opts ...server.StdioOption) error {
	b := new(book)
	ss := server.NewStdioServer(s)
	for _, o := range opts {
		o(ss)
	}
	return ss.Listen(withBook(ctx, b), in, &lineWriter{w: out, book: b})
}

// lineWriter rewrites each stdio message (mcp-go writes one per Write).
type lineWriter struct {
	w    io.Writer
	book *book
}

func (l *lineWriter) Write(p []byte) (int, error) {
	if _, err := l.w.Write(l.book.rewrite(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What go-sdk v1.8.0's streamable handler does with a malformed POST
// (mcp/streamable.go, servePOST): a body that is not JSON, that is not a
// JSON-RPC message, or a batch on 2025-06-18 or later gets HTTP 400 with a
// plain-text body; so does a request for a method the server does not
// serve, checked before the session sees it (protocol 2026-07-28 gets a
// JSON-RPC -32601 instead, but the proxy speaks up to 2025-11-25). A message
// with an id and neither method, result nor error is taken for a response
// to nothing: 202 Accepted, and no answer.
//
// The MCP transport spec lets a refused POST carry a JSON-RPC error in its
// body, and a JSON-RPC client can only read that. The front below answers
// the cases the SDK cannot tell apart (-32700 parse error; -32600 for the
// response to nothing, a batch, a value that is no message) with a JSON-RPC
// error, and turns the SDK's own plain-text 400s into JSON-RPC errors with
// the request's id (-32601 for a method not served, else -32600), keeping
// the SDK's status and words. Everything else reaches the SDK unchanged.

// HTTPHandler serves the proxy over streamable HTTP: go-sdk's handler with
// opts, behind a front that answers malformed requests with JSON-RPC errors.
func (p *Proxy) HTTPHandler(opts *mcp.StreamableHTTPOptions) http.Handler {
	limit := int64(mcp.DefaultMaxRequestBodyBytes)
	if opts != nil && opts.MaxRequestBodyBytes != 0 {
		limit = opts.MaxRequestBodyBytes
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.Server() }, opts)
	return &httpFront{next: h, limit: limit}
}

type httpFront struct {
	next  http.Handler
	limit int64 // request body bytes; negative: no limit
}

func (f *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.next.ServeHTTP(w, r)
		return
	}
	body := io.Reader(r.Body)
	if f.limit > 0 {
		body = http.MaxBytesReader(w, r.Body, f.limit)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		if mbe, ok := errs.AsType[*http.MaxBytesError](err); ok {
			writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("mcpledger proxy: the request body is over %d bytes; send smaller messages", mbe.Limit))
			return
		}
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("mcpledger proxy: reading the request body: %v; send it again", err))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	var id jsonrpc.ID
	if t := bytes.TrimSpace(data); len(t) > 0 {
		if !json.Valid(t) {
			var v any
			perr := json.Unmarshal(t, &v)
			writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeParseError, fmt.Sprintf("mcpledger proxy: the body is not JSON (%v); send one JSON-RPC message", perr))
			return
		}
		if t[0] == '[' {
			msg := checkBatch(t)
			if v := r.Header.Get("Mcp-Protocol-Version"); v >= batchesEnd {
				msg = "mcpledger proxy: JSON-RPC batches are not part of MCP since " + batchesEnd + "; send one message per request"
			}
			if msg != "" {
				writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, msg)
				return
			}
		} else {
			var msg string
			_, id, msg = checkMessage(t)
			if msg != "" {
				writeRPCError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest, msg)
				return
			}
		}
	}
	rw := &rpcErrors{ResponseWriter: w, id: id}
	f.next.ServeHTTP(rw, r)
	rw.finish()
}

// writeRPCError answers with status and a JSON-RPC error response.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	data, err := errorResponse(id, code, msg)
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data) // the host is gone if this fails; nothing to tell it
}

// rpcErrors passes the SDK's answer through, except a plain-text 400,
// which it holds and writes as a JSON-RPC error once the SDK is done.
type rpcErrors struct {
	http.ResponseWriter
	id      jsonrpc.ID
	holding bool
	status  int
	text    bytes.Buffer
}

func (w *rpcErrors) WriteHeader(status int) {
	if status == http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.holding, w.status = true, status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcErrors) Write(p []byte) (int, error) {
	if w.holding {
		return w.text.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController (the SDK flushes its event streams
// with one) reach the connection.
func (w *rpcErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *rpcErrors) Flush() {
	if w.holding {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *rpcErrors) finish() {
	if !w.holding {
		return
	}
	text := strings.TrimSpace(w.text.String())
	code := int64(jsonrpc.CodeInvalidRequest)
	msg := fmt.Sprintf("mcpledger proxy: invalid request (%s); fix the request by the MCP spec", text)
	// The SDK's words for a method it does not serve (jsonrpc2.ErrNotHandled).
	if strings.HasPrefix(text, "JSON RPC not handled") {
		code = jsonrpc.CodeMethodNotFound
		msg = fmt.Sprintf("mcpledger proxy: method not found (%s); the proxy serves the MCP methods up to 2025-11-25", text)
	}
	w.Header().Del("X-Content-Type-Options")
	writeRPCError(w.ResponseWriter, w.status, w.id, code, msg)
}

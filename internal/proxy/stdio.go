package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What go-sdk v1.8.0 does with malformed input over stdio (mcp/transport.go,
// ioConn): its read goroutine decodes the stream with one json.Decoder and
// returns at the first error, so a line that is not JSON ends the session;
// so does a batch array once 2025-06-18 or later is negotiated, an empty
// batch, a batch element that is not a JSON-RPC message, and any JSON value
// that is not one (a number, an object without "jsonrpc":"2.0"). A message
// with an id but neither method, result nor error decodes as a response to
// nothing and is dropped without an answer. What a well-formed request means
// (an unknown method: -32601; params that do not fit: -32602) the SDK answers
// itself and the session goes on.
//
// The guard below stands between the host's stdin and the SDK's IOTransport:
// it reads one line at a time, answers the lines the SDK would die on or
// drop (-32700 parse error, -32600 invalid request, with the message's id
// when it has one), and passes every other line on unchanged.

// batchesEnd is the first protocol version without JSON-RPC batches.
const batchesEnd = "2025-06-18"

// StdioTransport is the host-facing transport for stdio: go-sdk's
// IOTransport reading in and writing out, behind a guard that answers
// malformed lines with JSON-RPC errors and keeps the session serving. in and
// out are not closed.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &guardedOut{w: out}
	return &mcp.IOTransport{
		Reader:        &lineGuard{r: bufio.NewReader(in), out: w, max: mcp.DefaultMaxLineLength},
		Writer:        w,
		MaxLineLength: -1, // the guard bounds lines
	}
}

// guardedOut is the host's stdout, written by the SDK (one Write per
// message) and by the guard's answers.
type guardedOut struct {
	// mu guards w (so that lines never interleave), initID and version.
	mu sync.Mutex
	w  io.Writer
	// initID is the id of the host's initialize request while its answer
	// is due; version is the protocol version that answer named.
	initID  *jsonrpc.ID
	version string
	// cancelled: the host's requests it cancelled, whose response is
	// dropped (see cancel.go).
	cancelled cancelledSet
}

func (o *guardedOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.initID != nil {
		o.noteVersion(p)
	}
	if o.cancelled.take(p) {
		return len(p), nil
	}
	return o.w.Write(p)
}

// cancel notes that the host cancelled request id: its response is not
// written.
func (o *guardedOut) cancel(id jsonrpc.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancelled.add(id)
}

func (o *guardedOut) Close() error { return nil }

// noteVersion reads the negotiated version from the answer to initialize.
// The caller holds mu.
func (o *guardedOut) noteVersion(line []byte) {
	var m struct {
		ID     any `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(line, &m) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(m.ID); err != nil || id != *o.initID {
		return
	}
	o.version, o.initID = m.Result.ProtocolVersion, nil
}

// expectInit notes the id of the host's initialize request.
func (o *guardedOut) expectInit(id jsonrpc.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.initID = &id
}

// batches reports whether the SDK takes a batch on this session: before
// initialize is answered, and on versions before 2025-06-18.
func (o *guardedOut) batches() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.version == "" || o.version < batchesEnd
}

// answer writes a JSON-RPC error response.
func (o *guardedOut) answer(id jsonrpc.ID, code int64, msg string) error {
	data, err := errorResponse(id, code, msg)
	if err != nil {
		return err
	}
	_, err = o.Write(append(data, '\n'))
	return err
}

// lineGuard is the host's stdin as the SDK reads it: only lines the SDK
// can decode get through.
type lineGuard struct {
	r       *bufio.Reader
	out     *guardedOut
	max     int
	pending []byte // the rest of the line being passed on
	err     error  // the read error to return once pending is empty
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.line()
		g.err = err
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		pass, err := g.screen(line)
		if err != nil {
			// The host's stdout is gone: nothing more can be answered.
			g.err = err
			continue
		}
		if pass {
			g.pending = append(line, '\n')
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

func (g *lineGuard) Close() error { return nil }

// line reads one line without its end. A line over max is answered and
// dropped, not returned.
func (g *lineGuard) line() ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := g.r.ReadSlice('\n')
		if !over && len(line)+len(chunk) > g.max+1 {
			over, line = true, nil
		}
		if !over {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !over {
			return bytes.TrimRight(line, "\r\n"), err
		}
		msg := fmt.Sprintf("mcpledger proxy: a message over %d bytes was dropped; send smaller messages", g.max)
		if werr := g.out.answer(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, msg); werr != nil {
			return nil, werr
		}
		if err != nil {
			return nil, err
		}
		over = false
	}
}

// screen answers a line the SDK cannot take and reports whether to pass it
// on.
func (g *lineGuard) screen(line []byte) (pass bool, err error) {
	if !json.Valid(line) {
		var v any
		perr := json.Unmarshal(line, &v)
		return false, g.out.answer(jsonrpc.ID{}, jsonrpc.CodeParseError, fmt.Sprintf("mcpledger proxy: the line is not JSON (%v); send one JSON-RPC message per line", perr))
	}
	if t := bytes.TrimSpace(line); t[0] == '[' {
		if !g.out.batches() {
			return false, g.out.answer(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "mcpledger proxy: JSON-RPC batches are not part of MCP since "+batchesEnd+"; send one message per line")
		}
		if msg := checkBatch(t); msg != "" {
			return false, g.out.answer(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, msg)
		}
		return true, nil
	}
	m, id, msg := checkMessage(line)
	if msg != "" {
		return false, g.out.answer(id, jsonrpc.CodeInvalidRequest, msg)
	}
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" && req.IsCall() {
		g.out.expectInit(req.ID)
	}
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" && !req.IsCall() {
		if id, ok := cancelledID(line); ok {
			g.out.cancel(id)
		}
	}
	return true, nil
}

// checkMessage decodes one JSON value as the SDK would. msg, when not
// empty, says why it is not a JSON-RPC message the SDK can take; id is the
// message's id as far as it can be read. m carries the message's id and
// method (a request) or id (a response), not its params or result.
//
// A plain request (version tag "2.0", a method string, an id the SDK
// takes) is judged from one decoding with encoding/json. Anything else is
// decoded by the SDK's own reader as well, for its verdict and words: that
// reader allocates a 32 KiB buffer per message, which every call through
// the proxy would otherwise pay once more than the SDK itself does.
func checkMessage(data []byte) (m jsonrpc.Message, id jsonrpc.ID, msg string) {
	if req, ok := plainRequest(data); ok {
		return req, req.ID, ""
	}
	var loose struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &loose) == nil {
		id, _ = jsonrpc.MakeID(loose.ID) // an id of another type stays null
	}
	m, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, id, fmt.Sprintf("mcpledger proxy: not a JSON-RPC 2.0 message (%v); send an object with \"jsonrpc\":\"2.0\" and a method", err)
	}
	if _, ok := m.(*jsonrpc.Response); ok && len(loose.Result) == 0 && len(loose.Error) == 0 {
		return nil, id, "mcpledger proxy: the message has no method (nor result or error); a request names its method"
	}
	return m, id, ""
}

// plainRequest reads data as a request the SDK's reader is sure to take:
// an object whose exact keys (the SDK matches them case-sensitively) give
// the version tag "2.0", a method string, and an id that is absent, null,
// a string or a number, with no result or error, nested no deeper than
// the SDK allows. It reports false for anything else, which is left to
// the SDK's own reader to judge.
func plainRequest(data []byte) (*jsonrpc.Request, bool) {
	if !shallow(data, sdkMaxDepth) {
		return nil, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil || string(fields["jsonrpc"]) != `"2.0"` {
		return nil, false
	}
	if _, ok := fields["result"]; ok {
		return nil, false
	}
	if _, ok := fields["error"]; ok {
		return nil, false
	}
	var method string
	if raw, ok := fields["method"]; !ok || json.Unmarshal(raw, &method) != nil {
		return nil, false
	}
	var v any
	if raw, ok := fields["id"]; ok && json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return nil, false
	}
	return &jsonrpc.Request{ID: id, Method: method}, true
}

// sdkMaxDepth is the deepest nesting of objects and arrays go-sdk's reader
// accepts (its internal/json defaultMaxDepth).
const sdkMaxDepth = 1000

// shallow reports whether data nests objects and arrays at most limit
// deep, counting brackets outside strings.
func shallow(data []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case inString:
		case b == '{' || b == '[':
			if depth++; depth > limit {
				return false
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return true
}

// checkBatch reports why a batch is not one the SDK can take, or "".
func checkBatch(data []byte) string {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return fmt.Sprintf("mcpledger proxy: the batch cannot be read (%v); send one message per line", err)
	}
	if len(raws) == 0 {
		return "mcpledger proxy: the batch is empty; send at least one message"
	}
	seen := map[jsonrpc.ID]bool{}
	for i, raw := range raws {
		m, _, msg := checkMessage(raw)
		if msg != "" {
			return fmt.Sprintf("batch element %d: %s", i, msg)
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if seen[req.ID] {
				return fmt.Sprintf("mcpledger proxy: the batch repeats the id %v; give each request its own id", req.ID.Raw())
			}
			seen[req.ID] = true
		}
	}
	return ""
}

// errorResponse is a JSON-RPC error response; an invalid id is written as
// null, as the JSON-RPC spec asks when the request's id cannot be read.
func errorResponse(id jsonrpc.ID, code int64, msg string) ([]byte, error) {
	var raw any
	if id.IsValid() {
		raw = id.Raw()
	}
	return json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", raw, &jsonrpc.Error{Code: code, Message: msg}})
}

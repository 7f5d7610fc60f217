package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A request the host cancels (notifications/cancelled) gets no response:
// the MCP spec says a receiver should not answer it, and the host has
// forgotten its id. go-sdk answers every request whose handler returns,
// a cancelled one with its context's error (code 0, which is no JSON-RPC
// code). Over stdio the proxy owns the host's stdout, so the guard notes
// each cancelled id and drops the response written for it. The ledger is
// untouched by this: a call cancelled after it was sent upstream stays
// UNKNOWN in the proxy's record.

// maxCancelled bounds the cancelled ids remembered while their response
// is due; a cancel for a request already answered leaves its id here
// until newer ones push it out (MCP request ids are not reused within a
// session).
const maxCancelled = 1024

// cancelledSet is the ids of the host's cancelled requests whose response
// has not been dropped yet, oldest first.
type cancelledSet struct {
	ids   map[jsonrpc.ID]bool
	order []jsonrpc.ID
}

func (c *cancelledSet) add(id jsonrpc.ID) {
	if c.ids == nil {
		c.ids = map[jsonrpc.ID]bool{}
	}
	if c.ids[id] {
		return
	}
	if len(c.order) >= maxCancelled {
		delete(c.ids, c.order[0])
		c.order = c.order[1:]
	}
	c.ids[id] = true
	c.order = append(c.order, id)
}

// take reports whether line is the response to a cancelled request, and
// forgets the id when it is.
func (c *cancelledSet) take(line []byte) bool {
	if len(c.ids) == 0 {
		return false
	}
	id, ok := responseID(line)
	if !ok || !c.ids[id] {
		return false
	}
	delete(c.ids, id)
	for i, o := range c.order {
		if o == id {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	return true
}

// cancelledID is the requestId of a notifications/cancelled line.
func cancelledID(line []byte) (jsonrpc.ID, bool) {
	var n struct {
		Params struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(n.Params.RequestID)
	return id, err == nil && id.IsValid()
}

// responseID reads the id of a response line (one with a result or an
// error, not a method) from the members before its result, without
// decoding the result.
func responseID(line []byte) (jsonrpc.ID, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}, false
	}
	var id jsonrpc.ID
	seen := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return jsonrpc.ID{}, false
		}
		switch name, _ := t.(string); name {
		case "id":
			var v any
			if dec.Decode(&v) != nil {
				return jsonrpc.ID{}, false
			}
			if id, err = jsonrpc.MakeID(v); err != nil {
				return jsonrpc.ID{}, false
			}
			seen = true
		case "result", "error":
			return id, seen && id.IsValid()
		case "method":
			return jsonrpc.ID{}, false
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return jsonrpc.ID{}, false
			}
		}
	}
	return jsonrpc.ID{}, false
}

// codedErrors gives every error the proxy answers a JSON-RPC code, to the
// host (the server's receiving middleware) and to the upstream (its
// client's, for the requests it relays to the host). go-sdk writes an
// error that carries no *jsonrpc.Error with code 0, which no peer can
// classify: a transport failure on the way, no host to ask, a context's
// error. Those become -32603 (internal error) with their message; a
// *jsonrpc.Error anywhere in the chain keeps its code.
func codedErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil {
			return res, nil
		}
		if _, ok := errs.AsType[*jsonrpc.Error](err); ok {
			return nil, err
		}
		msg := fmt.Sprintf("mcpledger proxy: %s did not complete: %v", method, err)
		if ctx.Err() != nil {
			msg = fmt.Sprintf("mcpledger proxy: %s was cancelled: %v", method, err)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	}
}

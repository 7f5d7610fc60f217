package client

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// What a call the ledger did not complete looks like on go-sdk's wire: the
// answer a key-aware server (or agentctl proxy) gives a bare session, read
// from the row of the state the call stands in.

// WireError is the JSON-RPC error a key-aware server answers for a call
// that failed with err (an error of CallTool): by the row of the state it
// stands in (ledger.RowOf), -31001 for a reused key, with data.key,
// data.state and the model's text as its message. It is nil when the row
// answers with a result (DENIED, REJECTED, the tool's own answer) and for
// an error that names no state.
func WireError(err error) *jsonrpc.Error {
	var key string
	msg := err.Error()
	if ce, ok := errs.AsType[*Error](err); ok {
		key = ce.Key
		if ce.Text != "" {
			msg = ce.Text
		}
	}
	if errors.Is(err, ledger.ErrKeyReused) {
		return rpcError(ledger.CodeKeyReused, wire.ErrorData{Reason: ledger.ReasonKeyReused, Key: key}, msg)
	}
	st, ok := StateOf(err)
	if !ok {
		return nil
	}
	return RowError(st, key, msg)
}

// RowError is the JSON-RPC error of state st's row for key, with msg as
// its message; nil when the row answers with a result.
func RowError(st ledger.State, key, msg string) *jsonrpc.Error {
	row := ledger.RowOf(st)
	if row.Code == 0 {
		return nil
	}
	d := wire.ErrorData{Reason: row.Reason, Key: key, State: string(row.State)}
	if row.Code == ledger.CodeInProgress {
		d.RetryAfterMs = wire.RetryAfterMs(time.Second)
	}
	return rpcError(row.Code, d, msg)
}

func rpcError(code int64, d wire.ErrorData, msg string) *jsonrpc.Error {
	data, err := json.Marshal(d)
	if err != nil {
		// Strings and an integer always marshal.
		panic("client: encoding error data: " + err.Error())
	}
	return &jsonrpc.Error{Code: code, Message: msg, Data: data}
}

// answer is what session.CallTool returns, under the Middleware, for a
// call of p that failed with err: what a bare session gets from a
// key-aware server in that state.
func answer(ctx context.Context, p *mcp.CallToolParams, err error) (mcp.Result, error) {
	var je *jsonrpc.Error
	if errors.As(err, &je) && ledger.RequestError(je.Code) {
		// The server refused the request itself (unknown tool, invalid
		// params): its own error, as it sent it.
		return nil, je
	}
	st, named := StateOf(err)
	if ctx.Err() != nil && (!named || ledger.RowOf(st).Act != ledger.ActReconcile) {
		// The runtime gave up before the call could have run (or while it
		// waited on another's): its context's error, which err wraps, as
		// a bare session gives. A call that may have run is UNKNOWN,
		// below, whatever the context says.
		return nil, err
	}
	switch {
	case errors.Is(err, ledger.ErrInvalidKey):
		return nil, rpcError(ledger.CodeKeyRequired, wire.ErrorData{Reason: ledger.ReasonKeyInvalid}, err.Error())
	case errors.Is(err, ErrArgumentsTooLarge), !named && badArguments(p):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if je := WireError(err); je != nil {
		return nil, je
	}
	if !named {
		// The ledger itself failed before the call was sent (it could not
		// be read, say): a Go error, as a transport's would be.
		return nil, err
	}
	// DENIED, and REJECTED by no one's answer: the row answers with an
	// isError result that names the key and the state.
	text, key := err.Error(), ""
	if ce, ok := errs.AsType[*Error](err); ok {
		key = ce.Key
		if ce.Text != "" {
			text = ce.Text
		}
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		Meta:    mcp.Meta{wire.MetaError: map[string]any{"key": key, "state": string(st)}},
	}, nil
}

// badArguments reports whether p's arguments are not a JSON object, which
// the caller refuses before anything is recorded.
func badArguments(p *mcp.CallToolParams) bool {
	_, err := wire.MarshalArgs(p.Arguments)
	return err != nil
}

// malformed is err, a call refused before anything was recorded, with a
// -32602 *jsonrpc.Error (invalid params) in its chain when the params
// themselves are wrong: arguments the ledger cannot fingerprint (a member
// name given twice), or two different keys. The wrapper's caller finds
// the code with errors.As; the middleware and the proxy answer with it.
func malformed(err error) error {
	if !caller.Malformed(err) {
		return err
	}
	return &paramsError{err: err, rpc: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}}
}

// paramsError is a refusal of malformed params: its message is err's, and
// its chain holds both err and the -32602 answer.
type paramsError struct {
	err error
	rpc *jsonrpc.Error
}

func (e *paramsError) Error() string   { return e.err.Error() }
func (e *paramsError) Unwrap() []error { return []error{e.rpc, e.err} }

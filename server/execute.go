package server

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Error kinds the Guard stores on records (package guard's).
const (
	KindToolError     = guard.KindToolError     // FAILED: the handler returned isError
	KindPanic         = guard.KindPanic         // UNKNOWN: the handler panicked
	KindCanceled      = guard.KindCanceled      // UNKNOWN: the handler ended with its context
	KindHandlerError  = guard.KindHandlerError  // UNKNOWN: the handler returned a Go error
	KindRejected      = "refused_before_run"    // no longer stored: a handler's JSON-RPC refusal is kept under ledger.Refusal's kind
	KindInputRequired = guard.KindInputRequired // RETRYABLE: the handler asked for input before acting
	KindUnstorable    = guard.KindUnstorable    // UNKNOWN: the result could not be encoded
	KindReconciled    = guard.KindReconciled    // set by Reconcile
	KindNotRun        = guard.KindNotRun        // RETRYABLE: the handler said nothing happened (ErrNotRun)
)

// ErrNotRun is what a handler returns (wrapped, with %w) when it knows
// that nothing happened: its transaction rolled back, its database was
// busy, it was cancelled before it acted. The record becomes RETRYABLE and
// the client is told to send the same key again (-31002, reason not_run),
// so the next attempt runs the call. Any other Go error of a handler is
// UNKNOWN: the handler may have acted before it failed.
//
//	if err := tx.Commit(); err != nil {
//		return nil, Out{}, fmt.Errorf("payments: commit: %w: %w", server.ErrNotRun, err)
//	}
var ErrNotRun = guard.ErrNotRun

// ToolError is the answer of a handler whose tool ran and said no (out of
// stock, over the limit): an isError result with err's text, recorded
// FAILED and replayed to every repeat. Return it as the result, with a nil
// error; a Go error returned instead means the outcome is unknown.
//
//	if stock == 0 {
//		return server.ToolError(fmt.Errorf("out of stock: %s", in.Item)), Out{}, nil
//	}
func ToolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// end is what the handler chain returned, in the core's terms.
func end(res mcp.Result, err error) guard.End {
	cr, _ := res.(*mcp.CallToolResult)
	if cr == nil && err == nil {
		cr = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	e := guard.End{Err: err}
	if cr != nil {
		e.Reply, e.Encode, e.IsError, e.NeedsInput, e.Text = cr, encoder(cr), cr.IsError, len(cr.InputRequests) > 0, firstText(cr)
		if cr.IsError && err == nil {
			// A typed handler's Go error arrives as an isError result that
			// keeps the error (go-sdk's SetError); a result the handler
			// built itself keeps none. The error, not the result, says
			// what happened.
			e.Err = cr.GetError()
		}
	}
	if e.Err == nil {
		return e
	}
	e.ArgumentsRefused = argumentsRefused(e.Err)
	var je *jsonrpc.Error
	if errors.As(e.Err, &je) {
		e.Code, e.Text = je.Code, je.Message
	}
	return e
}

// firstText returns the first text content (the core cuts it to size).
func firstText(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// argumentsRefused reports whether err is go-sdk's typed handler refusing
// the arguments before it called the handler: a schema check ("validating
// \"arguments\": …", mcp/server.go) or their decoding into the handler's
// input type.
func argumentsRefused(err error) bool {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	return errors.As(err, &typeErr) || errors.As(err, &syntaxErr) || strings.HasPrefix(err.Error(), `validating "arguments": `)
}

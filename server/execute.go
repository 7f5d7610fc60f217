package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Error kinds this package stores on records.
const (
	KindToolError     = "tool_error"          // FAILED: the handler returned isError
	KindPanic         = "panic"               // UNKNOWN: the handler panicked
	KindCanceled      = "canceled"            // UNKNOWN: the handler ended with its context
	KindHandlerError  = "handler_error"       // UNKNOWN: the handler returned a Go error
	KindRejected      = "refused_before_run"  // no longer stored: a handler's JSON-RPC refusal is kept under ledger.Refusal's kind
	KindInputRequired = "input_required"      // RETRYABLE: the handler asked for input before acting
	KindUnstorable    = "unstorable"          // UNKNOWN: the result could not be encoded
	KindReconciled    = ledger.KindReconciled // set by Reconcile
	KindNotRun        = "not_run"             // RETRYABLE: the handler said nothing happened (ErrNotRun)
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
var ErrNotRun = ledger.ErrNotRun

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

// execute runs the handler as the winner of the claim (the lifecycle keeps
// the lease alive meanwhile) and says what happened: the report to store,
// and the reply to send.
func (g *Guard) execute(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest, c *call) (ledger.Report, mcp.Result, error) {
	telemetry.CallFrom(ctx).Executed()
	res, p, err := invoke(withCall(ctx, c), next, req)
	rep, reply, replyErr := g.judge(ctx, c, res, p, err)
	rep.Attempts = 1
	if rep.On == ledger.OnAmbiguous {
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, rep.ErrorKind)
	}
	g.opts.Logger.DebugContext(ctx, "mcpledger server: ran", "tool", c.id.Tool, "tenant", c.id.Tenant,
		"key", ledger.ShortHash(c.id.Key), "on", rep.On, "kind", rep.ErrorKind)
	return rep, reply, replyErr
}

type panicked struct {
	value any
	stack []byte
}

// invoke calls the handler and recovers a panic. The panic is not
// re-raised: go-sdk does not recover handler panics, so re-raising would
// take the whole server (and every other call in flight) down after the
// record was already made UNKNOWN; the caller gets -31003 instead and the
// stack goes to the log.
func invoke(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest) (res mcp.Result, p *panicked, err error) {
	defer func() {
		if r := recover(); r != nil {
			p = &panicked{value: r, stack: debug.Stack()}
		}
	}()
	res, err = next(ctx, "tools/call", req)
	return res, nil, err
}

// judge maps the handler's return to the outcome to store and the reply
// to send.
func (g *Guard) judge(ctx context.Context, c *call, res mcp.Result, p *panicked, err error) (ledger.Report, mcp.Result, error) {
	if p != nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: handler panicked; record left UNKNOWN",
			"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "panic", fmt.Sprint(p.value), "stack", string(p.stack))
		o := ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindPanic, ErrorMessage: fmt.Sprint(p.value)}
		return o, nil, wireError(wire.CodeOutcomeUnknown, wire.ReasonOutcomeUnknown, c.id.Key, string(ledger.StateUnknown),
			fmt.Sprintf("tool %q: the handler panicked; the outcome is unknown and the call will not run again until it is reconciled", c.id.Tool), 0)
	}
	if res, ok := res.(*mcp.CallToolResult); ok && res != nil && res.IsError && err == nil {
		// A typed handler's Go error arrives as an isError result that
		// keeps the error (go-sdk's SetError); a result the handler built
		// itself keeps none. The error, not the result, says what happened.
		err = res.GetError()
	}
	if err != nil {
		var je *jsonrpc.Error
		switch {
		case argumentsRefused(err):
			// go-sdk's typed handler refused the arguments before calling
			// the handler: nothing ran.
			return ledger.Report{On: ledger.OnRefused, ErrorKind: ledger.KindRefused, ErrorMessage: ledger.OneLine(err.Error(), 500)}, nil,
				invalidParams(fmt.Sprintf("tool %q: invalid arguments: %s", c.id.Tool, ledger.OneLine(err.Error(), 300)))
		case errors.Is(err, ErrNotRun):
			// The handler knows nothing happened: the next attempt with
			// the key runs it.
			o := ledger.Report{On: ledger.OnNotSent, ErrorKind: KindNotRun, ErrorMessage: ledger.OneLine(err.Error(), 500)}
			return o, nil, wireError(wire.CodeInProgress, wire.ReasonNotRun, c.id.Key, string(ledger.StateRetryable),
				fmt.Sprintf("tool %q: nothing happened (%s); send the same request again with the same key", c.id.Tool, ledger.OneLine(err.Error(), 300)), g.opts.RetryAfter)
		case ctx.Err() != nil || isContextErr(err):
			o := ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindCanceled, ErrorMessage: err.Error()}
			return o, nil, wireError(wire.CodeOutcomeUnknown, wire.ReasonOutcomeUnknown, c.id.Key, string(ledger.StateUnknown),
				fmt.Sprintf("tool %q: the handler stopped with its context (%v); the outcome is unknown", c.id.Tool, err), 0)
		case errors.As(err, &je) && refusedBeforeRun(je.Code):
			// The handler refused the request before acting, with the
			// JSON-RPC error ledger.Refusal reads as a client would: a
			// request error (-32602 arguments, -32600, ...) REJECTED, and
			// the same key may come back corrected; -31002 RETRYABLE.
			on, kind, _ := ledger.Refusal(je.Code)
			return ledger.Report{On: on, ErrorKind: kind, ErrorMessage: je.Message}, nil, err
		default:
			o := ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindHandlerError, ErrorMessage: err.Error()}
			return o, nil, wireError(wire.CodeOutcomeUnknown, wire.ReasonOutcomeUnknown, c.id.Key, string(ledger.StateUnknown),
				fmt.Sprintf("tool %q: the handler failed (%v); the outcome is unknown and the call will not run again until it is reconciled", c.id.Tool, err), 0)
		}
	}
	cr, ok := res.(*mcp.CallToolResult)
	if !ok || cr == nil {
		cr = &mcp.CallToolResult{Content: []mcp.Content{}}
		res = cr
	}
	if cr.IsError && ctx.Err() != nil {
		// The handler was cut off by its context and answered isError: it
		// may have acted before it was.
		o := ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindCanceled, ErrorMessage: firstText(cr, 500)}
		return o, nil, wireError(wire.CodeOutcomeUnknown, wire.ReasonOutcomeUnknown, c.id.Key, string(ledger.StateUnknown),
			fmt.Sprintf("tool %q: the handler stopped with its context (%s); the outcome is unknown", c.id.Tool, o.ErrorMessage), 0)
	}
	if len(cr.InputRequests) > 0 {
		// The handler asks for input before it acts (multi-round-trip). The
		// continuation comes back with the same key and claims the record
		// again, so the operation stays one operation.
		return ledger.Report{On: ledger.OnNotSent, ErrorKind: KindInputRequired}, res, nil
	}
	raw, compacted, err := g.encode(c, cr)
	if err != nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: result not storable; record left UNKNOWN",
			"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "err", err)
		return ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindUnstorable, ErrorMessage: err.Error()}, res, nil
	}
	o := ledger.Report{On: ledger.OnSucceeded, Result: raw, Compacted: compacted}
	if cr.IsError {
		o.On, o.ErrorKind, o.ErrorMessage = ledger.OnFailed, KindToolError, firstText(cr, 500)
	}
	return o, res, nil
}

// firstText returns the first text content, cut to at most n bytes.
func firstText(r *mcp.CallToolResult, n int) string {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if len(t.Text) > n {
				return t.Text[:n]
			}
			return t.Text
		}
	}
	return ""
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
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

// refusedBeforeRun reports whether code is a refusal before the tool ran
// (ledger.Refusal).
func refusedBeforeRun(code int64) bool {
	_, _, ok := ledger.Refusal(code)
	return ok
}

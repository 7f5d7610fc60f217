package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/compact"
	"github.com/mcpledger/mcpledger/telemetry"
)

// Error kinds the Guard stores on records.
const (
	KindToolError     = "tool_error"          // FAILED: the handler returned isError
	KindPanic         = "panic"               // UNKNOWN: the handler panicked
	KindCanceled      = "canceled"            // UNKNOWN: the handler ended with its context
	KindHandlerError  = "handler_error"       // UNKNOWN: the handler returned a Go error
	KindInputRequired = "input_required"      // RETRYABLE: the handler asked for input before acting
	KindUnstorable    = "unstorable"          // UNKNOWN: the result could not be encoded
	KindReconciled    = ledger.KindReconciled // set by Reconcile
	KindNotRun        = "not_run"             // RETRYABLE: the handler said nothing happened (ErrNotRun)
)

// ErrNotRun is what a handler returns (wrapped, with %w) when it knows
// that nothing happened: its transaction rolled back, its database was
// busy, it was cancelled before it acted. The record becomes RETRYABLE and
// the client is told to send the same key again (-31002, reason not_run).
// Any other Go error of a handler is UNKNOWN: the handler may have acted
// before it failed.
var ErrNotRun = ledger.ErrNotRun

// End is how a handler ended, in the core's terms: the adapter reads its
// SDK's result and error into it.
type End struct {
	// Reply is the SDK's result value, sent back as it is when the call
	// ends with a result.
	Reply any
	// Encode returns the result's JSON to store (a CallToolResult). Nil
	// means an empty result.
	Encode func() (json.RawMessage, error)
	// IsError: the result is the tool's own "no" (isError).
	IsError bool
	// NeedsInput: the result asks for input before the tool acts
	// (multi-round-trip); nothing took effect yet.
	NeedsInput bool
	// Text is the result's first text, or the message of a protocol error
	// (Code), for the record's error message.
	Text string
	// Err is the handler's Go error, or the error its SDK carries for it
	// (a typed handler's error inside an isError result).
	Err error
	// ArgumentsRefused: the SDK refused the arguments before it called the
	// handler (Err says why); nothing ran.
	ArgumentsRefused bool
	// Code is Err's JSON-RPC code when Err is a protocol error the SDK
	// sends with its own code (0: none). A refusal before the tool ran
	// (ledger.Refusal) is recorded as such and sent as it is.
	Code int64
}

// execute runs the handler as the winner of the claim (the lifecycle keeps
// the lease alive meanwhile) and says what happened: the report to store,
// and the answer.
func (g *Guard) execute(ctx context.Context, c *call, run func(context.Context) End) (ledger.Report, Answer) {
	telemetry.CallFrom(ctx).Executed()
	e, p := invoke(WithHandler(ctx, c.id.Key, c.fence), run)
	rep, ans := g.judge(ctx, c, e, p)
	rep.Attempts = 1
	if rep.On == ledger.OnAmbiguous {
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, rep.ErrorKind)
	}
	g.opts.Logger.DebugContext(ctx, "mcpledger server: ran", "tool", c.id.Tool, "tenant", c.id.Tenant,
		"key", ledger.ShortHash(c.id.Key), "on", rep.On, "kind", rep.ErrorKind)
	return rep, ans
}

type panicked struct {
	value any
	stack []byte
}

// invoke runs the handler and recovers a panic. The panic is not
// re-raised: neither go-sdk nor mcp-go recovers handler panics, so
// re-raising would take the whole server (and every call in flight) down
// after the record was already made UNKNOWN; the caller gets -31003
// instead and the stack goes to the log.
func invoke(ctx context.Context, run func(context.Context) End) (e End, p *panicked) {
	defer func() {
		if r := recover(); r != nil {
			p = &panicked{value: r, stack: debug.Stack()}
		}
	}()
	return run(ctx), nil
}

// judge maps the handler's end to the outcome to store and the answer.
func (g *Guard) judge(ctx context.Context, c *call, e End, p *panicked) (ledger.Report, Answer) {
	tool, key := c.id.Tool, c.id.Key
	if p != nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: handler panicked; record left UNKNOWN",
			"tool", tool, "key", ledger.ShortHash(key), "panic", fmt.Sprint(p.value), "stack", string(p.stack))
		return ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindPanic, ErrorMessage: ledger.OneLine(fmt.Sprint(p.value), 500)},
			Answer{Err: Unknown(tool, key, "the handler panicked")}
	}
	if err := e.Err; err != nil {
		switch {
		case e.ArgumentsRefused:
			// The SDK refused the arguments before calling the handler:
			// nothing ran.
			return ledger.Report{On: ledger.OnRefused, ErrorKind: ledger.KindRefused, ErrorMessage: ledger.OneLine(err.Error(), 500)},
				Answer{Err: InvalidParams(fmt.Sprintf("tool %q: invalid arguments: %s", tool, ledger.OneLine(err.Error(), 300)))}
		case errors.Is(err, ErrNotRun):
			// The handler knows nothing happened: the next attempt with
			// the key runs it.
			return ledger.Report{On: ledger.OnNotSent, ErrorKind: KindNotRun, ErrorMessage: ledger.OneLine(err.Error(), 500)},
				Answer{Err: RefuseAs(ledger.RowOf(ledger.StateRetryable), key, string(ledger.StateRetryable),
					fmt.Sprintf("tool %q: nothing happened (%s); send the same request again with the same key", tool, ledger.OneLine(err.Error(), 300)), g.opts.RetryAfter)}
		case ctx.Err() != nil || isContextErr(err):
			return ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindCanceled, ErrorMessage: ledger.OneLine(err.Error(), 500)},
				Answer{Err: Unknown(tool, key, fmt.Sprintf("the handler stopped with its context (%v)", err))}
		case e.Code != 0 && refusedBeforeRun(e.Code):
			// The handler refused the request before acting, with the
			// JSON-RPC error ledger.Refusal reads as a client would: a
			// request error (-32602 arguments, -32600, ...) REJECTED, and
			// the same key may come back corrected; -31002 RETRYABLE.
			on, kind, _ := ledger.Refusal(e.Code)
			msg := e.Text // the protocol error's own message, when the adapter has it
			if msg == "" {
				msg = err.Error()
			}
			return ledger.Report{On: on, ErrorKind: kind, ErrorMessage: ledger.OneLine(msg, 500)}, Answer{Err: err}
		default:
			return ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindHandlerError, ErrorMessage: ledger.OneLine(err.Error(), 500)},
				Answer{Err: Unknown(tool, key, fmt.Sprintf("the handler failed (%v)", ledger.OneLine(err.Error(), 300)))}
		}
	}
	if e.IsError && ctx.Err() != nil {
		// The handler was cut off by its context and answered isError: it
		// may have acted before it was.
		return ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindCanceled, ErrorMessage: ledger.OneLine(e.Text, 500)},
			Answer{Err: Unknown(tool, key, fmt.Sprintf("the handler stopped with its context (%s)", ledger.OneLine(e.Text, 300)))}
	}
	if e.NeedsInput {
		// The handler asks for input before it acts (multi-round-trip). The
		// continuation comes back with the same key and claims the record
		// again, so the operation stays one operation.
		return ledger.Report{On: ledger.OnNotSent, ErrorKind: KindInputRequired}, Answer{Reply: e.Reply}
	}
	raw, compacted, err := g.encode(c, e)
	if err != nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: result not storable; record left UNKNOWN",
			"tool", tool, "key", ledger.ShortHash(key), "err", err)
		return ledger.Report{On: ledger.OnAmbiguous, ErrorKind: KindUnstorable, ErrorMessage: ledger.OneLine(err.Error(), 500)}, Answer{Reply: e.Reply}
	}
	rep := ledger.Report{On: ledger.OnSucceeded, Result: raw, Compacted: compacted}
	if e.IsError {
		rep.On, rep.ErrorKind, rep.ErrorMessage = ledger.OnFailed, KindToolError, ledger.OneLine(e.Text, 500)
	}
	return rep, Answer{Reply: e.Reply}
}

// encode is the result as stored, compacted past MaxResult with the tool's
// Compactor (compact.Result by default), the same rule the client ledger
// uses.
func (g *Guard) encode(c *call, e End) (json.RawMessage, bool, error) {
	if e.Encode == nil {
		return json.RawMessage(`{"content":[]}`), false, nil
	}
	raw, err := e.Encode()
	if err != nil {
		return nil, false, fmt.Errorf("guard: encoding result of %q: %w", c.id.Tool, err)
	}
	small, changed, err := compact.Stored(raw, g.opts.MaxResult, c.policy.Compact)
	if err != nil {
		return nil, false, fmt.Errorf("guard: compacting result of %q: %w", c.id.Tool, err)
	}
	return small, changed, nil
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// refusedBeforeRun reports whether code is a refusal before the tool ran
// (ledger.Refusal).
func refusedBeforeRun(code int64) bool {
	_, _, ok := ledger.Refusal(code)
	return ok
}

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Error kinds this package stores on records.
const (
	KindToolError     = "tool_error"     // FAILED: the handler returned isError
	KindPanic         = "panic"          // UNKNOWN: the handler panicked
	KindCanceled      = "canceled"       // UNKNOWN: the handler ended with its context
	KindHandlerError  = "handler_error"  // UNKNOWN: the handler returned a Go error
	KindRejected      = "rejected"       // RETRYABLE: the handler refused the request (JSON-RPC -32700..-32600, -31002)
	KindInputRequired = "input_required" // RETRYABLE: the handler asked for input before acting
	KindUnstorable    = "unstorable"     // UNKNOWN: the result could not be encoded
	KindReconciled    = "reconciled"     // set by Reconcile
)

// settleTimeout bounds the write of an outcome. It runs on a context
// detached from the request, because a canceled request must still leave
// its record UNKNOWN rather than PROCESSING.
const settleTimeout = 10 * time.Second

// outcome is what one execution means for the ledger.
type outcome struct {
	to        ledger.State
	kind      string
	message   string
	result    json.RawMessage
	compacted bool
}

// execute runs the handler as the winner of the claim, with the lease kept
// alive, and stores what happened.
func (g *Guard) execute(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest, c *call) (mcp.Result, error) {
	telemetry.CallFrom(ctx).Executed()
	stop := g.keepLease(c.id)
	res, p, err := invoke(withKey(ctx, c.id.Key), next, req)
	stop()
	o, reply, replyErr := g.judge(ctx, c, res, p, err)
	g.settle(ctx, c, o)
	return reply, replyErr
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
func (g *Guard) judge(ctx context.Context, c *call, res mcp.Result, p *panicked, err error) (outcome, mcp.Result, error) {
	if p != nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: handler panicked; record left UNKNOWN",
			"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "panic", fmt.Sprint(p.value), "stack", string(p.stack))
		o := outcome{to: ledger.StateUnknown, kind: KindPanic, message: fmt.Sprint(p.value)}
		return o, nil, wireError(codeOutcomeUnknown, reasonOutcomeUnknown, c.id.Key, string(o.to),
			fmt.Sprintf("tool %q: the handler panicked; the outcome is unknown and the call will not run again until it is reconciled", c.id.Tool), 0)
	}
	if err != nil {
		var je *jsonrpc.Error
		switch {
		case ctx.Err() != nil || isContextErr(err):
			o := outcome{to: ledger.StateUnknown, kind: KindCanceled, message: err.Error()}
			return o, nil, wireError(codeOutcomeUnknown, reasonOutcomeUnknown, c.id.Key, string(o.to),
				fmt.Sprintf("tool %q: the handler stopped with its context (%v); the outcome is unknown", c.id.Tool, err), 0)
		case errors.As(err, &je) && (je.Code >= jsonrpc.CodeParseError && je.Code <= jsonrpc.CodeInvalidRequest || je.Code == codeInProgress):
			// A protocol-level refusal: the handler rejected the request
			// before acting. A retry with the same key asks it again.
			return outcome{to: ledger.StateRetryable, kind: KindRejected, message: je.Message}, nil, err
		default:
			o := outcome{to: ledger.StateUnknown, kind: KindHandlerError, message: err.Error()}
			return o, nil, wireError(codeOutcomeUnknown, reasonOutcomeUnknown, c.id.Key, string(o.to),
				fmt.Sprintf("tool %q: the handler failed (%v); the outcome is unknown and the call will not run again until it is reconciled", c.id.Tool, err), 0)
		}
	}
	cr, ok := res.(*mcp.CallToolResult)
	if !ok || cr == nil {
		cr = &mcp.CallToolResult{Content: []mcp.Content{}}
		res = cr
	}
	if cr.IsError && (ctx.Err() != nil || isContextErr(cr.GetError())) {
		// A typed handler's Go error arrives as an isError result; when it
		// is the context's error the handler was cut off, not refused.
		o := outcome{to: ledger.StateUnknown, kind: KindCanceled, message: firstText(cr, 500)}
		return o, nil, wireError(codeOutcomeUnknown, reasonOutcomeUnknown, c.id.Key, string(o.to),
			fmt.Sprintf("tool %q: the handler stopped with its context (%s); the outcome is unknown", c.id.Tool, o.message), 0)
	}
	if len(cr.InputRequests) > 0 {
		// The handler asks for input before it acts (multi-round-trip). The
		// continuation comes back with the same key and claims the record
		// again, so the operation stays one operation.
		return outcome{to: ledger.StateRetryable, kind: KindInputRequired}, res, nil
	}
	raw, compacted, err := g.encode(c, cr)
	if err != nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: result not storable; record left UNKNOWN",
			"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "err", err)
		return outcome{to: ledger.StateUnknown, kind: KindUnstorable, message: err.Error()}, res, nil
	}
	o := outcome{to: ledger.StateSucceeded, result: raw, compacted: compacted}
	if cr.IsError {
		o.to, o.kind, o.message = ledger.StateFailed, KindToolError, firstText(cr, 500)
	}
	return o, res, nil
}

// settle writes the outcome. A lost lease with a final outcome means the
// record went UNKNOWN while the handler ran (a stalled store, a sweep that
// beat the renewal): this process knows what happened, so it reconciles the
// record itself.
func (g *Guard) settle(ctx context.Context, c *call, o outcome) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	t := ledger.Transition{
		ID: c.id, From: ledger.StateProcessing, To: o.to, Owner: g.opts.Owner,
		Result: o.result, Compacted: o.compacted, ErrorKind: o.kind, ErrorMessage: o.message,
		AddAttempts: 1,
	}
	_, err := g.store.Transition(sctx, t)
	if errors.Is(err, ledger.ErrLeaseLost) && o.to.Final() {
		t.From = ledger.StateUnknown
		_, err = g.store.Transition(sctx, t)
	}
	if err != nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: storing outcome failed; lease expiry will make the record UNKNOWN",
			"tool", c.id.Tool, "key", ledger.ShortHash(c.id.Key), "state", o.to, "err", err)
		return
	}
	if o.to == ledger.StateUnknown {
		telemetry.CallFrom(ctx).EnteredUnknown(ctx, o.kind)
	}
	g.opts.Logger.DebugContext(ctx, "mcpledger server: stored", "tool", c.id.Tool, "tenant", c.id.Tenant,
		"key", ledger.ShortHash(c.id.Key), "state", o.to, "kind", o.kind)
}

// keepLease renews the lease every Lease/3 until stop is called, so a long
// handler is never mistaken for a dead one. stop waits for the renewer to
// finish, so no renewal races the final transition.
func (g *Guard) keepLease(id ledger.ID) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(g.opts.Lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := g.store.Renew(ctx, id, g.opts.Owner, g.opts.Lease)
			if err == nil || ctx.Err() != nil {
				continue
			}
			g.opts.Logger.Error("mcpledger server: renewing lease", "tool", id.Tool, "key", ledger.ShortHash(id.Key), "err", err)
			if errors.Is(err, ledger.ErrLeaseLost) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
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

package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// slowHint says how to give G12 a server it can cut off after the effect.
const slowHint = "run verify against a server that is slow after its effect, e.g. payments -fault handler-committed=sleep:5s"

// unknownResolves makes a call's outcome UNKNOWN at the server after its
// effect happened (the server is killed, or the call cancelled, once the
// counter sees the effect), then re-sends the key: the answer must be the
// first outcome, found by the tool's reconciler (or the server's own
// record), not -31003 for a person, and the tool must not run again.
func unknownResolves(ctx context.Context, r *runner) outcome {
	if !r.keyAware {
		return skip("the server does not advertise %s: its UNKNOWN calls are settled at the client, by a probe named in the policy file", wire.Capability)
	}
	if r.t.Count == nil {
		return skip("needs --count-cmd: the call is cut off once its effect is counted")
	}
	h := &hooks{}
	cs, err := r.session(ctx, h)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(cs)
	key := r.key("g12")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := r.direct(cctx, cs, key, 0, r.copyArgs())
		done <- answer{res, err}
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case a := <-done:
			if a.err == nil {
				return skip("the server answered in %s, before the call could be cut off after its effect; %s", ms(time.Since(start)), slowHint)
			}
			return fail("", "the call failed before its effect was counted: %v", a.err)
		case <-ctx.Done():
			return fail("", "%v", ctx.Err())
		case <-tick.C:
		}
		n, _, err := r.count(ctx, key)
		if err != nil {
			return fail("", "%v", err)
		}
		if n > 0 {
			break
		}
	}
	cut := "server killed"
	if h.kill != nil {
		if err := h.kill(); err != nil {
			return fail("", "killing the server after the effect: %v", err)
		}
	} else {
		cancel()
		cut = "call cancelled"
	}
	if a := <-done; a.err == nil {
		return skip("the call answered although it was cut off after its effect; %s", slowHint)
	}

	again, err := r.session(ctx, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(again)
	start = time.Now()
	res, err := r.direct(ctx, again, key, 0, r.copyArgs())
	took := time.Since(start)
	n, _, cerr := r.count(ctx, key)
	if cerr != nil {
		return fail("", "%v", cerr)
	}
	figure := fmt.Sprintf("%s after the effect; key re-sent: %s in %s, %d execution(s) %s", cut, answerText(res, err), ms(took), n, r.countedBy())
	tool := r.t.Tool
	code, _, _ := rpcCode(err)
	m, marked := replayMarker(res)
	switch {
	case code == ledger.CodeOutcomeUnknown:
		return fail(figure, "the re-sent key still answers %d (outcome unknown): a person must settle it; register a reconciler for %s (server.Options.Reconcilers) that looks the key up in the server's data", code, tool)
	case err != nil:
		return fail(figure, "the re-sent key failed though the effect happened; fix the reconciler of %s: it must find the effect and answer found", tool)
	case res.IsError:
		return fail(figure, "the re-sent key answered an error result though the effect happened; fix the reconciler of %s: it must answer found with the result", tool)
	case n != 1:
		return fail(figure, "the tool ran %d times for one key; fix the reconciler of %s: it answered not_run though the effect exists", n, tool)
	case !marked:
		return fail(figure, "the tool ran again instead of answering its first outcome: the reconciler of %s answered not_run though the effect exists; fix it", tool)
	}
	how := "the server's own record"
	if m.Reconciled != nil {
		how = fmt.Sprintf("%s (%s)", m.Reconciled.Method, m.Reconciled.By)
	}
	return pass("%s after the effect: resolved by %s in %s without a person, the first outcome replayed, %d execution", cut, how, ms(took), n)
}

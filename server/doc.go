// Package server makes a go-sdk MCP server refuse to run the same
// state-changing tool call twice. Its receiving middleware claims every
// guarded tools/call in a ledger under (tenant, tool, idempotency key): the
// first request runs the handler once, its result (success or isError) is
// stored, and every duplicate gets that result back with a replay marker,
// even across client sessions, reconnects and server restarts.
//
//	st, err := sqlite.Open(ctx, "ledger.db", nil)
//	if err != nil {
//		return err
//	}
//	g := server.New(st, nil) // guards every tool not annotated readOnlyHint
//	s := mcp.NewServer(impl, nil)
//	mcp.AddTool(s, createPaymentTool, createPayment)
//	s.AddReceivingMiddleware(g.Middleware())
//	go g.Run(ctx) // turns dead leases UNKNOWN, purges expired records
//	defer g.Close(ctx) // writes the call events still queued (ledger stats)
//
// Clients send the key in params._meta["io.github.mcpledger/idempotency-key"]
// or, when the tool's input schema declares it, as the idempotency_key
// argument. What they get back:
//
//   - no key, or one that breaks the key rules: -31004 (key_required,
//     key_invalid), nothing stored;
//   - arguments that fail the tool's input schema: -32602, nothing stored;
//   - the same key with other arguments: -31001 key_reused, nothing run;
//   - a duplicate while the first request runs: it waits up to
//     [Options].InProgressWait, then -31002 in_progress with retryAfterMs;
//   - a duplicate of a finished call: the stored result, with
//     _meta["io.github.mcpledger/replay"] = {key, state, firstAt, attempts};
//   - a call whose handler panicked, returned a Go error or its context's
//     error, or whose server died mid-handler: -31003 outcome_unknown until
//     the tool's [Reconciler] (Options.Reconcilers) finds out what happened
//     in the server's own data, when the next call with the key meets the
//     record or [Guard.Run]'s sweep comes by, or someone calls [Reconcile].
//
// The [Guard] is go-sdk's adapter of package [guard], the server core every SDK
// shares: it translates requests and answers, and guard decides.
//
// A handler reads the key with [KeyFromContext] and passes it on to its own
// downstream (an end-to-end key). The middleware also advertises
// capabilities.experimental["io.github.mcpledger/idempotency"], which tells
// clients that an ambiguous failure is safe to retry with the same key.
//
// Tool annotations come from the server's own tools/list handler (go-sdk
// has no tool getter), so tools added or removed at run time are seen at
// once. Multi-round-trip continuations (inputResponses, requestState) carry
// the original key: a handler that asks for input leaves the record
// RETRYABLE, and the continuation claims the same operation again. Such a
// handler must ask before it acts.
package server

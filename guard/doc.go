// Package guard is the server side of mcpledger for any MCP SDK: it runs
// each state-changing tool call once per (tenant, layer, tool, key) and
// answers every repeat from the record of the first. It reads a request's
// key, fence and tenant, claims the operation in a [ledger.Store], runs the
// handler under a renewed lease, judges how the handler ended (a result,
// isError, a Go error, a panic, [ErrNotRun], a refusal before it ran),
// replays the record to every duplicate, refuses stale fences, and sweeps
// dead leases and expired records.
//
// It knows no MCP SDK. An adapter translates: package
// [github.com/mcpledger/mcpledger/server] for
// github.com/modelcontextprotocol/go-sdk, package mcpgo for
// github.com/mark3labs/mcp-go. Each turns its SDK's request into a
// [Request], its handler's return into an [End], and the [Answer] back into
// its SDK's reply:
//
//	g := guard.New(store, nil)
//	a := g.Call(ctx, &guard.Request{Tool: name, Meta: meta, Arguments: args},
//		func(ctx context.Context) guard.End {
//			res, err := handler(ctx)
//			return guard.End{Reply: res, Err: err, Encode: func() (json.RawMessage, error) { return json.Marshal(res) }}
//		})
//	switch {
//	case a.Err != nil: // a *guard.Refusal becomes the SDK's JSON-RPC error
//	case a.Replay != nil: // guard.Replay(a.Replay) is the result to send
//	default: // a.Reply is the handler's own result
//	}
//
// A handler reads its key with [KeyFromContext] and passes it on to its
// own downstream (an end-to-end key).
package guard

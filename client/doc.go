// Package client wraps a go-sdk MCP client session so that every tool call is
// safe to repeat: each call gets a stable idempotency key, is recorded in a
// [ledger.Store], and a repeated call (a client retry, a model re-planning the
// same call, a process restart) gets the first execution's result instead of
// a second side effect.
//
//	store, _ := sqlite.Open(ctx, "ledger.db", nil)
//	c := client.New(session, store, &client.Options{Tenant: "acme", Session: "run-7"})
//	ctx = client.WithChain(ctx, requestID) // keys derive from the chain entry
//	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "create_payment", Arguments: args})
//
// Code that holds only a session (an agent runtime's tool runner that calls
// session.CallTool itself) is protected by the [Middleware] instead, added to
// the go-sdk client that made the session; its calls go through the same
// caller under the same Options, and session.CallTool answers as go-sdk
// does for a bare session (ledger refusals as *jsonrpc.Error):
//
//	mw := client.NewMiddleware(store, &client.Options{Tenant: "acme", Session: "run-7"})
//	defer mw.Close()
//	mc.AddSendingMiddleware(mw.Wrap)
//
// [Client.CallTool] has the meaning of [mcp.ClientSession.CallTool]. Tool errors
// (isError) are results, recorded FAILED and replayed. Go errors mean the
// call was not completed: errors.Is(err, [ledger.ErrKeyReused]),
// [ErrOutcomeUnknown], [ErrDenied] or [ledger.ErrInProgress] tell why, and an
// [*Error] carries the key and a short text a model can read.
//
// Keys: an explicit key ([WithKey]) wins; otherwise, inside a chain ([WithChain])
// the key is derived from the chain id, the tool and the argument
// fingerprint, so a replayed chain derives the same keys; otherwise the
// re-planning guard ([github.com/mcpledger/mcpledger/planner]) matches the call against the session's
// recent calls inside the tool's window, and only a call that matches nothing
// gets a fresh random key.
//
// Transient failures (the request provably never reached the server) are
// retried with jittered backoff under the same key. Ambiguous failures (the
// request may have run) are retried only when the server advertises the
// idempotency capability or the tool is idempotent by trusted configuration;
// otherwise the record becomes UNKNOWN and the caller gets ErrOutcomeUnknown.
//
// [Options] configure a [Client] or a [Middleware]; [Dial] keeps a session
// alive through a [ConnectFunc]. Every call runs package [caller]'s one
// orchestration: this package only translates go-sdk's requests and results.
package client

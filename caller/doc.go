// Package caller runs an MCP tool call through the ledger from start to
// end, for any MCP SDK: the key ([WithKey], [WithChain], [WithNewKey], or the
// re-planning guard), the policy and a person's confirmation or the
// approval queue, the claim, sending with retries under one key and fence,
// settling the record through [ledger.Lifecycle], replay, and the resend of
// an UNKNOWN call to a key-aware server. What a state means is read from
// package ledger's table ([ledger.RowOf], [ledger.Act], [ledger.Explain]); this
// package decides nothing a state does not say.
//
// The SDK adapters are thin: package client (go-sdk), package mcpgo
// (mark3labs/mcp-go) and the proxy (over package client) each give a
// [Caller] a [Conn], which sends one attempt and says what the server
// advertised, and a [Codec], which encodes, decodes, copies and marks the
// SDK's result type; a [Link] keeps the adapter's session, replaces it when
// it dies and caches the tool list. A call is one [Request] in and one
// [Outcome] or [*Error] out, the same on every SDK:
//
//	c := caller.New(store, &caller.Options{Tenant: "acme"}, conn, codec, "client")
//	o, err := c.Call(caller.WithKey(ctx, "order-1042"), caller.Request[P]{Tool: "create_payment", Arguments: args, Params: p})
//
// What both ends of a call read the same way lives below it: the key and
// fence of a request's _meta and the replay marker in package wire
// ([wire.KeyOf], [wire.FenceOf], [wire.Mark]), a server's refusals and the
// handler's view of its guarded call in package [guard]. The names this
// package used to hold stay as deprecated aliases (compat.go). It imports
// no MCP SDK's session or transport.
package caller

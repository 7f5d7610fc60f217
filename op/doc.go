// Package op holds what identifies an mcpledger operation the same way on
// every MCP SDK: the idempotency key, chain and new-key requests a caller
// puts in its context, the key and fence a guarded handler runs under,
// argument marshalling, reading the key and fence from a request's _meta,
// the replay marker, and a server's answer to a repeat. The go-sdk adapters
// (packages client and server) and the mcp-go adapters (package mcpgo) all
// use it, so a caller of either SDK writes the same code:
//
//	ctx = op.WithKey(ctx, "order-1042")  // client.WithKey is the same
//	res, err := c.CallTool(ctx, params)  // go-sdk or mcp-go wrapper
//
//	key, _ := op.KeyFromHandler(ctx) // in a guarded tool handler
//
// The package imports no MCP SDK.
package op

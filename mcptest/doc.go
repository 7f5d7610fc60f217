// Package mcptest is a fault-injecting MCP server for tests of MCP clients
// and of the mcpledger client, server and end-to-end behaviour.
//
// A Server offers a non-idempotent "write" tool that counts executions per
// idempotency key and records the key of every attempt, so a test can assert
// that a retry carried the same key and that a side effect ran once. Faults
// are scripted per upcoming call: fail with -31002 before executing, execute
// then drop the connection, execute then stall past the client's deadline,
// execute then exit the process, return isError, return a protocol error,
// answer with an HTTP status. The server runs in-memory, as a stdio child
// (the test binary re-executed) or over streamable HTTP on 127.0.0.1:
//
//	s := mcptest.New(&mcptest.Options{Idempotent: true})
//	cs := s.ConnectInMemory(ctx, t, nil)
//	s.Script(mcptest.FailTransient(2), mcptest.DropAfterExecute())
//	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
//		Name:      "write",
//		Meta:      mcp.Meta{mcptest.MetaKey: "order-42"},
//		Arguments: map[string]any{"id": "order-42", "amount": 10},
//	})
//	// ... s.Executions("order-42"), s.KeysSeen()
//
// With Options.StateFile, counts, first results and the fault script live in
// a JSON-lines file that survives a restart of the serving process and is
// shared with the test process.
package mcptest

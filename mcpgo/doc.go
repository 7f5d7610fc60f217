// Package mcpgo gives code on github.com/mark3labs/mcp-go the protection
// packages client and server give go-sdk code: a [Client] around mcp-go's
// client with the meaning of
// [github.com/mcpledger/mcpledger/client.Client], and a [Guard] for mcp-go
// servers with the meaning of [github.com/mcpledger/mcpledger/server.Guard]. Both run on the one lifecycle
// ([ledger.Lifecycle]), the one per-tool settings type
// ([ledger.ToolSettings]) and the one wire home (package [wire]), so either SDK's client and either
// SDK's server protect each other.
//
// An agent:
//
//	mc := client.NewClient(mcpgo.Transport(transport.NewStdio("payments", nil)))
//	// mc.Start, mc.Initialize as usual
//	c, err := mcpgo.New(mc, store, nil)
//	res, err := c.CallTool(caller.WithKey(ctx, "order-1042"), req)
//
// A server:
//
//	g := mcpgo.NewGuard(store, nil)
//	s := server.NewMCPServer("payments", "v1", g.ServerOptions()...)
//	http.Handle("/mcp", g.Handler(server.NewStreamableHTTPServer(s)))
//
// Where mcp-go cannot say what the wire conventions need, the package
// supplies it: [Transport] keeps the code and data of a server's JSON-RPC
// errors and a result's bytes, which mcp-go's client drops; [Guard.Handler]
// and [Guard.ServeStdio] send the Guard's refusals with their -3100x codes, which an
// mcp-go tool middleware cannot choose.
//
// [ClientOptions] configure a Client and [ServerOptions] a Guard; both
// run package [caller]'s and package [guard]'s cores, and this package only
// translates.
package mcpgo

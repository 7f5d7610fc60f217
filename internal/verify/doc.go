// Package verify checks the mcpledger guarantees against a deployment: a
// ledger (SQLite or PostgreSQL) and the MCP server in front of which it
// runs, the way `agentctl verify` does. Each guarantee (G1, G2, ...) makes
// real calls and real ledger writes, in a scratch tenant and layer of its
// own that Run removes afterwards, and ends pass, fail or skip (with the
// reason), with a figure such as "20 concurrent callers, 1 execution":
//
//	results, err := verify.Run(ctx, verify.Target{
//		Store: st,
//		Dial:  func(ctx context.Context) (mcp.Transport, error) { return srv.Transport(), nil },
//		Tool:  "create_payment",
//		Args:  map[string]any{"amount_cents": 100, "currency": "EUR", "payee": "verify"},
//	}, nil, func(r verify.Result) { fmt.Println(r.ID, r.Status) })
//
// A check that cannot fail is no check: every guarantee fails, naming
// itself, against a server or store built to break it (the tests of
// cmd/agentctl run them).
package verify

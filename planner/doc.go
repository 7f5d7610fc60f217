// Package planner stops a model from repeating a tool call it already made.
//
// Models lose results (a timeout, a truncated context) and re-plan: they
// issue the same call again, with no idempotency key of their own. The [Guard]
// recognizes such a call by (tenant, session, tool, argument fingerprint)
// inside a time window and says what the earlier call became, so the caller
// replays its result, waits for it, or refuses, instead of executing twice:
//
//	g := &planner.Guard{Store: st, Tools: ledger.Tools{"send_mail": {Window: time.Hour}}}
//	v, err := g.Check(ctx, planner.Query{Tenant: "acme", Session: "s1", Tool: "send_mail", Fingerprint: fp})
//	switch v.Decision {
//	case planner.Run:
//		// execute; reuse v.Record.Key when v.Record is set
//	case planner.Replay:
//		// return v.Record.Result
//	default:
//		// tell the model: planner.Explain(v)
//	}
//
// The package also answers the ledger to the model as two read-only MCP
// tools, ledger_status and ledger_list, scoped to the caller's tenant and
// session ([Tools]); package [github.com/mcpledger/mcpledger/planner/ledgertools] serves them on a go-sdk
// server. Package planner itself imports no MCP SDK.
package planner

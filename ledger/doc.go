// Package ledger is the domain of mcpledger: the record of one tool-call
// operation, its states and legal transitions, the rules for idempotency keys,
// and the Store contract that every storage backend implements. The
// arguments' fingerprint is [args.Fingerprint], in package ledger/args.
//
// An operation is identified by (tenant, layer, tool, key); the layer says
// whose record it is (a client, a proxy, a server guard), so all three can
// share one ledger, each with its own record of a key. The first caller to
// Claim an identity executes the call; every later caller is a follower and
// gets the first execution's record instead of a second run:
//
//	st, _ := sqlite.Open(ctx, "ledger.db", nil)
//	fp, _ := args.Fingerprint(raw)
//	c, err := st.Claim(ctx, ledger.ClaimRequest{
//		ID:          ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "order-42"},
//		Fingerprint: fp,
//		Owner:       "worker-1",
//	})
//	if c.Won {
//		// run the side effect, then Transition to SUCCEEDED or FAILED
//	}
//
// This package holds no storage code; see ledger/sqlite (embedded default) and
// ledger/postgres (shared by many processes). ledger/ledgertest is the
// conformance suite both pass.
package ledger

// Package payments is the library behind the example payments MCP server
// (examples/payments): a non-idempotent create_payment tool that writes to
// its own SQLite database and enqueues payment.created in the same
// transaction, a read-only get_payment, an in-process downstream that
// applies delivered events once through an Inbox and counts what it sees,
// and fault hooks for crash tests. It uses packages server and outbox
// exactly as the README tells server authors to:
//
//	app, err := payments.Open(ctx, payments.Config{DB: "payments.db"})
//	if err != nil {
//		return err
//	}
//	defer app.Close()
//	go app.Run(ctx) // outbox dispatcher and ledger sweeper
//	err = app.Server().Run(ctx, &mcp.StdioTransport{})
package payments

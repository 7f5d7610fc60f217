// Package postgres is the ledger.Store that many processes and hosts share:
// agent runtimes on several machines, or replicas of one MCP server, claim
// operations against one PostgreSQL database, and its primary key on
// (tenant, layer, tool, key) decides which caller executes.
//
//	st, err := postgres.Open(ctx, "postgres://app:secret@db:5432/app", nil)
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	c, err := st.Claim(ctx, ledger.ClaimRequest{
//		ID:          ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "order-42"},
//		Fingerprint: fp,
//		Owner:       "worker-1",
//	})
//
// How it keeps the contract:
//
//   - A claim is INSERT ... ON CONFLICT DO NOTHING RETURNING; only when it
//     inserted nothing is the existing record read, and the take-overs (a
//     RETRYABLE or REJECTED record, a settled one past retention) tried,
//     each as one guarded UPDATE that also raises the key's fence. Nothing checks and then inserts. A winner builds its
//     record from what it inserted, and a transition returns only the
//     columns it did not write, so no result travels back to the client.
//   - Transitions are compare-and-set UPDATEs on state, lease owner and
//     fence, so a stale owner's write matches no row and changes nothing.
//   - Followers in this process are woken by the writer; followers in other
//     processes by LISTEN/NOTIFY on the channel "mcpledger:<schema>", with a
//     bounded poll as the fallback. A follower marks the record it waits
//     for, and only marked records are notified, after their commit:
//     NOTIFY holds a database-wide lock through a transaction's commit,
//     which would otherwise serialize every completion.
//   - Claims and transitions that a Store's callers make at the same time
//     share round trips and commits: while writes are in flight, those
//     arriving gather and go out together in one transaction, claims as
//     one multi-row insert, transitions of one shape as one multi-row
//     update, so one WAL flush serves them all. Each keeps its own outcome:
//     a conflict or a stale fence changes nothing but its own row, and a
//     statement the server refuses sends every member back to run alone. A
//     lone caller's write goes out at once, as one statement.
//   - Every timestamp comes from Options.Now, never from the database clock.
//   - ExpireLeases and Purge work in bounded batches with SKIP LOCKED.
//   - While the server restarts, operations retry for Options.ReconnectFor.
//     A write whose connection died after it was sent reads its row back
//     and compares the random token it wrote, so a claim is won, and a
//     transition done, exactly when it committed.
//
// The portable mode (Options.Portable, or mcpledger_mode=portable in the
// URL) runs on PG-wire distributed databases: no LISTEN/NOTIFY (followers
// poll, with a bounded backoff), no advisory locks, and serialization
// failures (SQLSTATE 40001) retried with the same key; see portable.go.
//
// The tables live in one schema: Options.Schema, else the first entry of the
// URL's search_path parameter, else "mcpledger". Open creates it and applies
// the embedded, versioned migrations under an advisory lock (in the
// portable mode, by racing for each version row), one transaction each; a
// schema migrated by a newer build is refused with ErrSchemaTooNew.
//
// Times are stored at PostgreSQL's resolution, the microsecond.
package postgres

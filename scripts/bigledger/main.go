// Command bigledger builds a large SQLite ledger to time agentctl against,
// and is not run by CI:
//
//	go run ./scripts/bigledger -ledger /tmp/big.db -records 1000000
//	go run ./scripts/bigledger -ledger /tmp/big.db -records 1000000 -schema 6
//
// Four template records (one per tool, tenant "default", layer client) are
// written through the store's own write path: a claim and a transition to
// SUCCEEDED. Every other record is a copy of a template made in SQL, one
// transaction for the lot, with its own key (bulk-00000000 …), session
// (one per 100 records) and times (one millisecond apart, expiring a day
// later), so the rows are the write path's rows. Record i is of tool
// create_payment when i is a multiple of 4.
//
// -schema N leaves the file at schema version N by dropping what later
// migrations made (only 6, before records_key, is supported), so that an
// older agentctl opens it and a newer one migrates it.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver of the bulk copy

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

var tools = []string{"create_payment", "refund_payment", "get_balance", "send_email"}

func main() {
	path := flag.String("ledger", "", "the SQLite ledger `FILE` to create (must not exist)")
	n := flag.Int("records", 1000000, "how many bulk records to add beside the 4 templates")
	schema := flag.Int("schema", 0, "leave the file at this schema `VERSION` (6), or the current one when 0")
	flag.Parse()
	if err := run(*path, *n, *schema); err != nil {
		fmt.Fprintln(os.Stderr, "bigledger:", err)
		os.Exit(1)
	}
}

func run(path string, n, schema int) error {
	if path == "" {
		return fmt.Errorf("-ledger is required")
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists; pass a new file", path)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	args := json.RawMessage(`{"amount":4200,"currency":"EUR","to":"acct-000123"}`)
	fp, err := ledger.Fingerprint(args)
	if err != nil {
		return err
	}
	for _, tool := range tools {
		id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: tool, Key: "template-" + tool}
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "template", Fingerprint: fp,
			Arguments: args, Owner: "bigledger"})
		if err != nil {
			return err
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "bigledger", Fence: c.Record.Fence,
			Result: json.RawMessage(`{"content":[{"type":"text","text":"payment pay-000123 created"}],"isError":false}`)}); err != nil {
			return err
		}
	}
	if err := st.Close(); err != nil {
		return err
	}

	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	start := time.Now()
	base := time.Now().UnixNano()
	_, err = db.ExecContext(ctx, `WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < ?)
INSERT INTO records (tenant, layer, tool, key, session, fingerprint, arguments, state, attempts, fence,
	result, compacted, error_kind, error_message, owner, lease_until, approval, trace_id, span_id,
	reuse_policy, tombstone, created_at, updated_at, expires_at, reconciled, findings, finding_count, reconcile_at)
SELECT t.tenant, t.layer, t.tool, printf('bulk-%08d', i.n), printf('s-%06d', i.n / 100),
	t.fingerprint, t.arguments, t.state, t.attempts, t.fence,
	t.result, t.compacted, t.error_kind, t.error_message, t.owner, t.lease_until, t.approval, t.trace_id, t.span_id,
	t.reuse_policy, t.tombstone, ? + i.n * 1000000, ? + i.n * 1000000, ? + i.n * 1000000 + 86400000000000,
	t.reconciled, t.findings, t.finding_count, t.reconcile_at
FROM i JOIN records t ON t.key = 'template-' || CASE i.n % 4 WHEN 0 THEN 'create_payment' WHEN 1 THEN 'refund_payment' WHEN 2 THEN 'get_balance' ELSE 'send_email' END`,
		n, base, base, base)
	if err != nil {
		return fmt.Errorf("bulk copy: %w", err)
	}
	fmt.Printf("bulk copy of %d records: %s\n", n, time.Since(start).Round(time.Millisecond))
	switch schema {
	case 0:
	case 6:
		if _, err := db.ExecContext(ctx, `DROP INDEX records_key; PRAGMA user_version = 6`); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-schema %d: only 6 is supported", schema)
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return err
	}
	return nil
}

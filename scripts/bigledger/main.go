// Command bigledger builds a large ledger, SQLite or PostgreSQL, to time
// agentctl against, and is not run by CI:
//
//	go run ./scripts/bigledger -ledger /tmp/big.db -records 1000000
//	go run ./scripts/bigledger -ledger /tmp/big.db -records 1000000 -schema 7
//	go run ./scripts/bigledger -ledger 'postgres://u:p@127.0.0.1/db?search_path=big' -records 1000000
//
// The records are package bulk's: five templates written through the
// store's own write path, and copies of them made in SQL, each with its
// own key (bulk-00000000 …), session (one per 100 records) and times (one
// millisecond apart, the newest made now, expiring a day after they were
// made), so the rows are the write path's rows. Record i is of tool
// create_payment when i is a multiple of 4; -unknown-every N makes one
// record in N an UNKNOWN create_payment, and -expired 0.1 puts the oldest
// tenth past its retention.
//
// -schema N leaves a SQLite file at schema version N by dropping what
// later migrations made (6, before records_key, or 7, before the list
// indexes of 0008), so that an older agentctl opens it and a newer one
// migrates it.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver of -schema

	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/scripts/bigledger/bulk"
)

func main() {
	path := flag.String("ledger", "", "the ledger to create: a SQLite `FILE` (must not exist) or a postgres:// URL whose search_path names a new schema")
	n := flag.Int("records", 1000000, "how many bulk records to add beside the 5 templates")
	unknown := flag.Int("unknown-every", 0, "make one record in `N` an UNKNOWN create_payment (0: none)")
	expired := flag.Float64("expired", 0, "the `SHARE` of records (0 to 1), the oldest, whose retention ended an hour ago")
	schema := flag.Int("schema", 0, "leave a SQLite file at this schema `VERSION` (6 or 7), or the current one when 0")
	flag.Parse()
	if err := run(*path, *n, bulk.Shape{UnknownEvery: *unknown, Expired: *expired}, *schema); err != nil {
		fmt.Fprintln(os.Stderr, "bigledger:", err)
		os.Exit(1)
	}
}

func run(path string, n int, shape bulk.Shape, schema int) error {
	if path == "" {
		return fmt.Errorf("-ledger is required")
	}
	ctx := context.Background()
	start := time.Now()
	if postgres.IsURL(path) {
		if schema != 0 {
			return fmt.Errorf("-schema is for a SQLite file only")
		}
		if err := bulk.Postgres(ctx, path, n, shape); err != nil {
			return err
		}
		fmt.Printf("bulk copy of %d records: %s\n", n, time.Since(start).Round(time.Millisecond))
		return nil
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists; pass a new file", path)
	}
	if err := bulk.SQLite(ctx, path, n, shape); err != nil {
		return err
	}
	fmt.Printf("bulk copy of %d records: %s\n", n, time.Since(start).Round(time.Millisecond))
	var drop string
	switch schema {
	case 0:
		return nil
	case 6:
		drop = `DROP INDEX records_key; DROP INDEX records_state; DROP INDEX records_session;
			DROP INDEX records_tool; PRAGMA user_version = 6`
	case 7:
		drop = `DROP INDEX records_state; DROP INDEX records_session; DROP INDEX records_tool;
			PRAGMA user_version = 7`
	default:
		return fmt.Errorf("-schema %d: only 6 and 7 are supported", schema)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }() // the statements below are what counts
	if _, err := db.ExecContext(ctx, drop); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// Package bulk fills a SQLite or PostgreSQL ledger with many records whose
// rows are the store's own write path's rows, for the programs that time
// agentctl against a large ledger (scripts/bigledger, scripts/scalebench).
//
// A few template records (tenant "default", layer client) are written
// through the store's write path: one per tool, claimed and moved to
// SUCCEEDED, and one create_payment claimed and moved to UNKNOWN (no
// answer). Every other record is a copy of a template made in SQL, with
// its own key (bulk-00000000 …), session (s-000000, one per 100 records)
// and times, so every column the store writes is the store's. Record i is
// of tool Tools[i%4], SUCCEEDED, except that when Shape.UnknownEvery is set
// every record with i%UnknownEvery == UnknownEvery/2 is an UNKNOWN
// create_payment. The copy names no column but those it sets: a column a
// later migration adds is copied from the template as it is.
package bulk

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/mattn/go-sqlite3" // the driver of the SQLite copy

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// Tools are the tools of the records, in turn.
var Tools = []string{"create_payment", "refund_payment", "get_balance", "send_email"}

// Shape is what the copies look like.
type Shape struct {
	// UnknownEvery, when > 0, makes one record in UnknownEvery an UNKNOWN
	// create_payment (Unknown tells which).
	UnknownEvery int
	// Expired is the share of records (0 to 1), the oldest, whose
	// retention ended an hour before now: what ledger purge removes. The
	// others were made up to a second before now, and their retention
	// ends an hour after now at the earliest.
	Expired float64
	// Retention is each record's retention (ledger.DefaultRetention when 0).
	Retention time.Duration
	// Now is the time the newest record is made before (time.Now when zero).
	Now time.Time
	// Chunk is how many records one statement copies (1,000,000 when 0).
	Chunk int
	// Progress, when set, is told after each statement.
	Progress func(done, n int)
}

// Key is the key of record i.
func Key(i int) string { return fmt.Sprintf("bulk-%08d", i) }

// Session is the session of record i.
func Session(i int) string { return fmt.Sprintf("s-%06d", i/100) }

// Tool is the tool of record i under s.
func (s Shape) Tool(i int) string {
	if s.Unknown(i) {
		return Tools[0]
	}
	return Tools[i%len(Tools)]
}

// Unknown reports whether record i is UNKNOWN under s.
func (s Shape) Unknown(i int) bool { return s.UnknownEvery > 0 && i%s.UnknownEvery == s.UnknownEvery/2 }

// Expiring is how many of n records are expired under s: records 0 to
// Expiring-1.
func (s Shape) Expiring(n int) int { return int(s.Expired * float64(n)) }

func (s Shape) retention() time.Duration {
	if s.Retention > 0 {
		return s.Retention
	}
	return ledger.DefaultRetention
}

// times places n records: record i is made at old + i*step when
// i < Expiring(n), else at young + i*step. Records are a millisecond
// apart, or closer when the unexpired ones would not fit in the
// retention less two hours.
func (s Shape) times(n int) (old, young time.Time, step time.Duration) {
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	step = time.Millisecond
	if room := s.retention() - 2*time.Hour; n > 0 && room > 0 && time.Duration(n)*step > room {
		step = room / time.Duration(n)
	}
	e := s.Expiring(n)
	young = now.Add(-time.Second - time.Duration(n-1)*step)
	old = now.Add(-s.retention() - time.Hour - time.Duration(e-1)*step)
	return old, young, step
}

func (s Shape) chunk() int {
	if s.Chunk > 0 {
		return s.Chunk
	}
	return 1000000
}

const unknownTemplate = "template-unknown"

// templates writes the template records through st's write path.
func templates(ctx context.Context, st ledger.Store) error {
	doc := json.RawMessage(`{"amount":4200,"currency":"EUR","to":"acct-000123"}`)
	fp, err := args.Fingerprint(doc)
	if err != nil {
		return err
	}
	claim := func(tool, key string) (ledger.ID, int64, error) {
		id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: tool, Key: key}
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "template", Fingerprint: fp,
			Arguments: doc, Owner: "bigledger"})
		if err != nil {
			return id, 0, err
		}
		return id, c.Record.Fence, nil
	}
	for _, tool := range Tools {
		id, fence, err := claim(tool, "template-"+tool)
		if err != nil {
			return err
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "bigledger", Fence: fence, AddAttempts: 1,
			Result: json.RawMessage(`{"content":[{"type":"text","text":"payment pay-000123 created"}],"isError":false}`)}); err != nil {
			return err
		}
	}
	id, fence, err := claim(Tools[0], unknownTemplate)
	if err != nil {
		return err
	}
	_, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown,
		Owner: "bigledger", Fence: fence, AddAttempts: 1, ErrorKind: ledger.KindNoAnswer,
		ErrorMessage: "the server did not answer within the call's timeout"})
	return err
}

// templateOf is the SQL expression of the template key record n copies;
// mod(k) is the expression of n modulo k in the store's SQL.
func (s Shape) templateOf(mod func(k int) string) string {
	expr := "'template-' || CASE " + mod(4) + " WHEN 0 THEN 'create_payment' WHEN 1 THEN 'refund_payment' WHEN 2 THEN 'get_balance' ELSE 'send_email' END"
	if s.UnknownEvery > 0 {
		expr = fmt.Sprintf("CASE WHEN %s = %d THEN '%s' ELSE %s END", mod(s.UnknownEvery), s.UnknownEvery/2, unknownTemplate, expr)
	}
	return expr
}

// SQLite creates the ledger file path (which must not exist) with n bulk
// records beside the templates.
func SQLite(ctx context.Context, path string, n int, s Shape) error {
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	if err := templates(ctx, st); err != nil {
		_ = st.Close() // the template's error says what went wrong
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }() // a read-only close after the checkpoint below
	// Every column but a rowid alias, which numbers the copies itself.
	cols, err := columns(ctx, db, `SELECT name FROM pragma_table_info('records')
WHERE NOT (pk = 1 AND upper(type) = 'INTEGER' AND (SELECT count(*) FROM pragma_table_info('records') WHERE pk > 0) = 1)
ORDER BY cid`)
	if err != nil {
		return err
	}
	old, young, step := s.times(n)
	at := fmt.Sprintf("(CASE WHEN i.n < %d THEN %d ELSE %d END + i.n * %d)", s.Expiring(n), old.UnixNano(), young.UnixNano(), step.Nanoseconds())
	set := map[string]string{
		"key":        "printf('bulk-%08d', i.n)",
		"session":    "printf('s-%06d', i.n / 100)",
		"created_at": at,
		"updated_at": at,
		"expires_at": fmt.Sprintf("%s + %d", at, s.retention().Nanoseconds()),
	}
	names, exprs := copyList(cols, set, "t.")
	// The copies join a temporary table of the templates, not records:
	// without statistics SQLite looks a template up by the unique key's
	// (tenant, layer) prefix, a scan of every record copied so far for
	// each new one. A temporary table lives on one connection.
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }() // returns it to the pool; db.Close ends it
	if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE templates AS SELECT * FROM records WHERE tenant = 'default' AND layer = 'client' AND key LIKE 'template-%'`); err != nil {
		return fmt.Errorf("bulk copy: the templates: %w", err)
	}
	stmt := fmt.Sprintf(`WITH RECURSIVE i(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM i WHERE n + 1 < ?)
INSERT INTO records (%s) SELECT %s FROM i JOIN temp.templates t ON t.key = %s`,
		names, exprs, s.templateOf(func(k int) string { return fmt.Sprintf("(i.n %% %d)", k) }))
	for from := 0; from < n; from += s.chunk() {
		to := min(from+s.chunk(), n)
		if _, err := conn.ExecContext(ctx, stmt, from, to); err != nil {
			return fmt.Errorf("bulk copy: %w", err)
		}
		if s.Progress != nil {
			s.Progress(to, n)
		}
	}
	_, err = conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// Postgres creates the ledger at url (its search_path names the schema,
// which must not exist yet) with n bulk records beside the templates, and
// analyzes the table, as autovacuum would after such a load.
func Postgres(ctx context.Context, url string, n int, s Shape) error {
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		return err
	}
	if err := templates(ctx, st); err != nil {
		_ = st.Close() // the template's error says what went wrong
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Every column but one the database numbers itself.
	rows, err := pool.Query(ctx, `SELECT column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'records'
	AND is_identity = 'NO' AND coalesce(column_default, '') NOT LIKE 'nextval(%'
ORDER BY ordinal_position`)
	if err != nil {
		return err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	old, young, step := s.times(n)
	at := fmt.Sprintf("(CASE WHEN n < %d THEN '%s'::timestamptz ELSE '%s'::timestamptz END + n * interval '%d microseconds')",
		s.Expiring(n), old.UTC().Format(time.RFC3339Nano), young.UTC().Format(time.RFC3339Nano), step.Microseconds())
	set := map[string]string{
		"key":        "'bulk-' || lpad(n::text, 8, '0')",
		"session":    "'s-' || lpad((n / 100)::text, 6, '0')",
		"created_at": at,
		"updated_at": at,
		"expires_at": fmt.Sprintf("%s + interval '%d microseconds'", at, s.retention().Microseconds()),
	}
	names, exprs := copyList(cols, set, "t.")
	// As in SQLite, the copies join a temporary table of the templates
	// (on one connection), whatever the planner thinks of records before
	// its statistics catch up.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE templates AS SELECT * FROM records WHERE tenant = 'default' AND layer = 'client' AND key LIKE 'template-%'`); err != nil {
		return fmt.Errorf("bulk copy: the templates: %w", err)
	}
	stmt := fmt.Sprintf(`INSERT INTO records (%s) SELECT %s FROM generate_series($1::bigint, $2::bigint - 1) AS n
JOIN pg_temp.templates t ON t.key = %s`,
		names, exprs, s.templateOf(func(k int) string { return fmt.Sprintf("(n %% %d)", k) }))
	for from := 0; from < n; from += s.chunk() {
		to := min(from+s.chunk(), n)
		if _, err := conn.Exec(ctx, stmt, from, to); err != nil {
			return fmt.Errorf("bulk copy: %w", err)
		}
		if s.Progress != nil {
			s.Progress(to, n)
		}
	}
	_, err = conn.Exec(ctx, `ANALYZE records`)
	return err
}

// columns reads one column of names.
func columns(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // read-only
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// copyList is the INSERT's column list and the SELECT's expressions: set's
// for the columns it names, the template's (prefix) for every other.
func copyList(cols []string, set map[string]string, prefix string) (names, exprs string) {
	var e []string
	for _, c := range cols {
		if x, ok := set[c]; ok {
			e = append(e, x)
		} else {
			e = append(e, prefix+c)
		}
	}
	return strings.Join(cols, ", "), strings.Join(e, ", ")
}

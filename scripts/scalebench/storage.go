package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/mattn/go-sqlite3" // the sizes of a SQLite ledger
)

// storage is what a ledger takes on disk.
type storage struct {
	records int64
	// total is the file (SQLite, after a checkpoint) or the table with its
	// indexes and TOAST (PostgreSQL).
	total int64
	// table is the records table alone; indexes each of its indexes.
	table   int64
	indexes []sized
}

type sized struct {
	name  string
	bytes int64
}

func sizesOf(ctx context.Context, store, led string, n int) (storage, error) {
	if store == "sqlite" {
		return sqliteSizes(ctx, led)
	}
	return postgresSizes(ctx, led)
}

// sqliteSizes reads a SQLite ledger's sizes. The driver's default build
// has no dbstat table, so each index's size is the pages DROP INDEX frees,
// in a transaction that is rolled back; the table's are the pages DROP
// TABLE frees after that, its unique key's automatic index included.
func sqliteSizes(ctx context.Context, path string) (s storage, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return s, err
	}
	s.total = fi.Size()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return s, err
	}
	defer func() { _ = db.Close() }() // nothing is written: the transaction rolls back
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return s, err
	}
	defer func() { _ = tx.Rollback() }() // the point: every drop below is undone
	var pageSize int64
	if err := tx.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		return s, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM records`).Scan(&s.records); err != nil {
		return s, err
	}
	var names []string
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			_ = rows.Close() // read-only
			return s, err
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		return s, err
	}
	freed := func(stmt string) (int64, error) {
		var before, after int64
		if err := tx.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&before); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return 0, err
		}
		if err := tx.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&after); err != nil {
			return 0, err
		}
		return (after - before) * pageSize, nil
	}
	for _, n := range names {
		b, err := freed(`DROP INDEX "` + n + `"`)
		if err != nil {
			return s, err
		}
		s.indexes = append(s.indexes, sized{n, b})
	}
	s.table, err = freed(`DROP TABLE records`)
	return s, err
}

func postgresSizes(ctx context.Context, led string) (storage, error) {
	var s storage
	pool, err := pgxpool.New(ctx, led)
	if err != nil {
		return s, err
	}
	defer pool.Close()
	if err := pool.QueryRow(ctx, `SELECT count(*), pg_total_relation_size('records'), pg_table_size('records') FROM records`).
		Scan(&s.records, &s.total, &s.table); err != nil {
		return s, err
	}
	rows, err := pool.Query(ctx, `SELECT c.relname, pg_relation_size(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'records'::regclass ORDER BY c.relname`)
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var x sized
		if err := rows.Scan(&x.name, &x.bytes); err != nil {
			return s, err
		}
		s.indexes = append(s.indexes, x)
	}
	return s, rows.Err()
}

// dropLedger removes the ledger of a size: the SQLite file and its
// companions, or the PostgreSQL schema.
func dropLedger(ctx context.Context, store, led string, n int) error {
	if store == "sqlite" {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal", ".lock"} {
			if err := os.Remove(led + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}
	pool, err := pgxpool.New(ctx, led)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+schemaOf(n)+` CASCADE`)
	if err != nil {
		return fmt.Errorf("dropping schema %s: %w", schemaOf(n), err)
	}
	return nil
}

// proc is the payments example, serving streamable HTTP.
type proc struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

var listening = regexp.MustCompile(`listening on (http://\S+/)`)

// startPayments runs the payments example with a ledger of its own and
// no daily limit, and waits for its "listening on URL" line.
func startPayments(ctx context.Context, dir, bin string) (*proc, error) {
	log, err := os.Create(filepath.Join(dir, "payments.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-db", filepath.Join(dir, "payments.db"), "-http", "127.0.0.1:0", "-limit", "1000000000000")
	cmd.Env = cleanEnv()
	pr, err := cmd.StderrPipe()
	if err != nil {
		_ = log.Close() // empty yet
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = log.Close() // empty yet
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		defer func() { _ = log.Close() }() // the log is for a person after a failure
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			_, _ = fmt.Fprintln(log, sc.Text()) // as above
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(log, pr) // a line past the scanner's limit
	}()
	go func() { p.done <- cmd.Wait() }()
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case p.url = <-found:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("the payments example exited before it listened (%v); see %s", err, log.Name())
	case <-timer.C:
		_ = p.stop() // the error returned says what went wrong
		return nil, fmt.Errorf("the payments example did not listen within 60s; see %s", log.Name())
	case <-ctx.Done():
		_ = p.stop() // interrupted
		return nil, ctx.Err()
	}
}

func (p *proc) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill() // already gone
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill() // it had its chance
		return <-p.done
	}
}

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/mcpledger/mcpledger/internal/sqlitedialect"
)

// drvConn is what the writer needs from the driver's connection: the
// driver's own statements, without database/sql's per-call machinery, and
// whether a transaction is still open after a failed COMMIT. The driver
// file (driver_mattn.go, or the pure-Go driver behind driver_nocgo.go)
// adapts its connection to it.
type drvConn = sqlitedialect.Conn

// errKind is what classify needs to know of a driver error.
type errKind = sqlitedialect.Kind

const (
	kindOther       = sqlitedialect.KindOther
	kindBusy        = sqlitedialect.KindBusy        // SQLITE_BUSY or SQLITE_LOCKED
	kindNotDatabase = sqlitedialect.KindNotDatabase // SQLITE_NOTADB or SQLITE_CORRUPT
	kindReadOnly    = sqlitedialect.KindReadOnly    // SQLITE_READONLY
	kindFull        = sqlitedialect.KindFull        // SQLITE_FULL, or an I/O error of ENOSPC
)

// execer is what the write helpers need from the write connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*wrows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) scanner
	// autocommit reports that no transaction is open: each statement
	// commits as it completes (see wconn).
	autocommit() bool
	// readRow is QueryRowContext for a statement that writes nothing.
	readRow(ctx context.Context, query string, args ...any) scanner
}

// errNeedTx is how a single-statement op, run outside a transaction,
// learns that its first statement changed nothing and it must start over
// inside one.
var errNeedTx = errors.New("sqlite: the write needs a transaction")

// wconn runs the writer's statements on the driver connection directly.
// database/sql would start a goroutine per transaction and per query to
// watch a context; the writer never cancels a statement (a batch serves
// many callers), so that machinery is pure cost on the hot path.
type wconn struct {
	c drvConn
	// auto: no transaction is open, so each statement commits as it
	// completes. Only a single op runs so: it may read, and make one
	// write; once that has changed a row, a further statement is refused
	// as a bug, since the write is already committed. An op that needs
	// more returns errNeedTx while it has changed nothing, and starts
	// over inside a transaction.
	auto    bool
	wrote   bool
	reading bool
	named   []driver.NamedValue
}

func (w *wconn) autocommit() bool { return w.auto }

// guard admits a statement under the auto rules above.
func (w *wconn) guard() error {
	if w.auto && w.wrote {
		return errors.New("sqlite: a single-statement write ran a second statement")
	}
	return nil
}

func (w *wconn) begin() error {
	return w.end("BEGIN IMMEDIATE")
}

// end runs a statement without arguments: BEGIN, COMMIT, savepoints.
func (w *wconn) end(stmt string) error {
	_, err := w.c.ExecContext(context.Background(), stmt, nil)
	return err
}

// bind converts arguments as database/sql would. The context is
// deliberately not passed down: see wconn.
func (w *wconn) bind(args []any) ([]driver.NamedValue, error) {
	named := w.named[:0]
	for i, a := range args {
		switch a.(type) {
		case nil, string, []byte, int64, bool, float64:
		default:
			v, err := driver.DefaultParameterConverter.ConvertValue(a)
			if err != nil {
				return nil, fmt.Errorf("sqlite: argument %d: %w", i+1, err)
			}
			a = v
		}
		named = append(named, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	w.named = named
	return named, nil
}

func (w *wconn) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	if err := w.guard(); err != nil {
		return nil, err
	}
	named, err := w.bind(args)
	if err != nil {
		return nil, err
	}
	res, err := w.c.ExecContext(context.Background(), query, named)
	if err != nil {
		return nil, err
	}
	if w.auto {
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		w.wrote = n > 0
	}
	return res, nil
}

func (w *wconn) QueryContext(_ context.Context, query string, args ...any) (*wrows, error) {
	if err := w.guard(); err != nil {
		return nil, err
	}
	named, err := w.bind(args)
	if err != nil {
		return nil, err
	}
	rows, err := w.c.QueryContext(context.Background(), query, named)
	if err != nil {
		return nil, err
	}
	return &wrows{w: w, rows: rows, vals: make([]driver.Value, len(rows.Columns()))}, nil
}

// QueryRowContext reads the first row and runs the statement to its end:
// outside a transaction, a RETURNING statement commits only then, and a
// failed commit must surface here.
func (w *wconn) QueryRowContext(ctx context.Context, query string, args ...any) scanner {
	rows, err := w.QueryContext(ctx, query, args...)
	if err != nil {
		return errRow{err}
	}
	// Every way out below closes rows and checks it; this covers a panic.
	defer func() { _ = rows.Close() }()
	if !rows.Next() {
		if err := rows.Close(); err != nil {
			return errRow{err}
		}
		return errRow{sql.ErrNoRows}
	}
	row := valueScanner(append([]driver.Value(nil), rows.vals...))
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		return errRow{err}
	}
	return row
}

func (w *wconn) readRow(ctx context.Context, query string, args ...any) scanner {
	w.reading = true
	defer func() { w.reading = false }()
	return w.QueryRowContext(ctx, query, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// wrows is the small part of sql.Rows the writer uses.
type wrows struct {
	w      *wconn
	rows   driver.Rows
	vals   []driver.Value
	err    error
	closed bool
}

func (r *wrows) Next() bool {
	if r.closed || r.err != nil {
		return false
	}
	err := r.rows.Next(r.vals)
	if errors.Is(err, io.EOF) {
		return false
	}
	if err != nil {
		r.err = err
		return false
	}
	if r.w.auto && !r.w.reading {
		// A row of a writing statement (RETURNING) is a changed row.
		r.w.wrote = true
	}
	return true
}

func (r *wrows) Scan(dest ...any) error {
	return valueScanner(r.vals).Scan(dest...)
}

func (r *wrows) Err() error { return r.err }

// Close ends the statement; it reports the first error met.
func (r *wrows) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	if err := r.rows.Close(); err != nil && r.err == nil {
		r.err = err
	}
	return r.err
}

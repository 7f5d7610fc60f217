package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/mcpledger/mcpledger/ledger"
)

// getRaw reads one record through the driver directly. Replays are the
// hot read path: skipping database/sql's row machinery and its reflective
// conversions roughly halves the cost of a Get.
func (s *Store) getRaw(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }() // a read: it only goes back to the pool
	var rec *ledger.Record
	err = conn.Raw(func(dc any) error {
		q, err := rawConn(dc)
		if err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, selectRecord, []driver.NamedValue{
			{Ordinal: 1, Value: id.Tenant}, {Ordinal: 2, Value: id.Layer}, {Ordinal: 3, Value: id.Tool}, {Ordinal: 4, Value: id.Key},
		})
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }() // a read: one row, taken below
		var vals [numColumns]driver.Value
		if err := rows.Next(vals[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return sql.ErrNoRows
			}
			return err
		}
		rec, err = scanRecord(valueScanner(vals[:]))
		return err
	})
	return rec, err
}

// numColumns is the length of the columns list.
const numColumns = 28

// valueScanner assigns driver values to scanRecord's destinations by type,
// without reflection.
type valueScanner []driver.Value

func (v valueScanner) Scan(dest ...any) error {
	if len(dest) != len(v) {
		return fmt.Errorf("sqlite: scan %d columns into %d values", len(v), len(dest))
	}
	for i, d := range dest {
		if err := assign(d, v[i]); err != nil {
			return fmt.Errorf("sqlite: column %d: %w", i, err)
		}
	}
	return nil
}

func assign(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
			return nil
		case []byte:
			*d = string(x)
			return nil
		}
	case *[]byte:
		switch x := v.(type) {
		case nil:
			*d = nil
			return nil
		case []byte:
			*d = x // the driver hands over a fresh copy
			return nil
		case string:
			*d = []byte(x)
			return nil
		}
	case *int64:
		if x, ok := v.(int64); ok {
			*d = x
			return nil
		}
	case *int:
		if x, ok := v.(int64); ok {
			*d = int(x)
			return nil
		}
	case *bool:
		switch x := v.(type) {
		case int64:
			*d = x != 0
			return nil
		case bool:
			*d = x
			return nil
		}
	case *sql.NullString:
		switch x := v.(type) {
		case nil:
			*d = sql.NullString{}
			return nil
		case string:
			*d = sql.NullString{String: x, Valid: true}
			return nil
		}
	}
	return fmt.Errorf("cannot store %T in %T", v, dest)
}

// mattnStyleDSN is the connection string in mattn/go-sqlite3's keys. Writes BEGIN IMMEDIATE so a write
// transaction takes the lock up front and never fails mid-way on a lock
// upgrade; the busy timeout makes a locked database wait before failing.
func mattnStyleDSN(path string, o Options, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(o.BusyTimeout.Milliseconds()))
	q.Set("_synchronous", o.Synchronous.pragma())
	q.Set("_stmt_cache_size", "32")
	// database/sql never shares a connection between goroutines, so
	// SQLite's per-connection mutex is pure overhead.
	q.Set("_mutex", "no")
	if readOnly {
		q.Set("_query_only", "1")
	} else {
		q.Set("_txlock", "immediate")
	}
	if o.ReadOnly {
		// The file is opened read-only: nothing can write it, not even
		// SQLite's own journal-mode switch.
		q.Set("mode", "ro")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	// url.URL renders "file:///abs"; SQLite accepts that form.
	return u.String()
}

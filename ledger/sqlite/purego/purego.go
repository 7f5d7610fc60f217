//go:build !cgo

package purego

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/mcpledger/mcpledger/internal/sqlitedialect"
	"github.com/ncruces/go-sqlite3"
	ncdriver "github.com/ncruces/go-sqlite3/driver"
)

// sqlDriver is the pure-Go driver under a name of this package's own, so
// that it never meets mattn/go-sqlite3's in a cgo build.
const sqlDriver = "mcpledger_sqlite3_purego"

func init() {
	sql.Register(sqlDriver, &ncdriver.SQLite{})
	sqlitedialect.Register(&sqlitedialect.Dialect{
		Module:            "github.com/ncruces/go-sqlite3",
		SQLDriver:         sqlDriver,
		PrepareCompanions: prepareCompanions,
		DSN:               dsnFor,
		Conn:              rawConn,
		Kind:              errorKind,
		// The pure-Go VFS needs a -shm file it can write to read a WAL
		// ledger (see ledger/sqlite's immutableOpen).
		ReadsReadOnlyShm: false,
		AppDSN:           "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate&_pragma=synchronous(FULL)",
	})
}

// prepareCompanions creates a missing -shm file with the ledger's own
// mode: the pure-Go VFS creates it 0666 less the umask, where SQLite's C
// VFS takes the ledger's mode (the -wal file gets it through modeof in
// the DSN). An existing one is left to widenCompanions.
func prepareCompanions(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("sqlite purego: stat %s: %w", path, err)
	}
	f, err := os.OpenFile(path+"-shm", os.O_RDWR|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite purego: create %s-shm: %w", path, err)
	}
	return f.Close()
}

// dsnFor is the connection string in ncruces's keys: the settings of
// mattnStyleDSN as _pragma entries, _txlock=immediate for writes, and the
// WAL size limit that the cgo build sets in its connect hook.
func dsnFor(path string, o sqlitedialect.Settings, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous("+o.Synchronous+")")
	q.Add("_pragma", "journal_size_limit(67108864)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	if o.Immutable {
		// See immutableOpen.
		q.Set("immutable", "1")
	}
	if o.ReadOnlyFile {
		q.Set("mode", "ro")
	} else {
		// The -wal file (and any journal) takes the ledger's mode.
		q.Set("modeof", path)
	}
	// SQLite decodes its own URI parameters (modeof) and reads '+' as a
	// plus, not a space.
	u := url.URL{Scheme: "file", Path: path, RawQuery: strings.ReplaceAll(q.Encode(), "+", "%20")}
	return u.String()
}

// ncConn adapts ncruces's connection to sqlitedialect.Conn. Its connection runs a
// statement with arguments through a prepared statement (ExecContext
// without arguments is direct), so each call prepares one and closes it
// when done.
type ncConn struct{ c ncdriver.Conn }

func (n ncConn) InTx() bool { return !n.c.Raw().GetAutocommit() }

func (n ncConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) == 0 {
		if ex, ok := n.c.(driver.ExecerContext); ok {
			return ex.ExecContext(ctx, query, nil)
		}
	}
	st, err := n.c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := st.(driver.StmtExecContext).ExecContext(ctx, args)
	return res, errors.Join(err, st.Close())
}

func (n ncConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, err := n.c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	// database/sql asks for the columns before the first Next, and the
	// driver's rows count on it; the raw read path does the same.
	rows.Columns()
	return stmtRows{Rows: rows, st: st}, nil
}

// stmtRows closes its statement with the rows, and copies each []byte
// value: the driver's point into SQLite's memory, valid only until the
// next row (database/sql copies them for Scan; the raw path keeps them).
type stmtRows struct {
	driver.Rows
	st io.Closer
}

func (r stmtRows) Next(dest []driver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		return err
	}
	for i, v := range dest {
		if b, ok := v.([]byte); ok {
			dest[i] = bytes.Clone(b)
		}
	}
	return nil
}

func (r stmtRows) Close() error { return errors.Join(r.Rows.Close(), r.st.Close()) }

func rawConn(dc any) (sqlitedialect.Conn, error) {
	c, ok := dc.(ncdriver.Conn)
	if !ok {
		return nil, fmt.Errorf("sqlite purego: driver connection is %T", dc)
	}
	return ncConn{c}, nil
}

func errorKind(err error) sqlitedialect.Kind {
	// The driver reports an error as *sqlite3.Error, or as a bare
	// ErrorCode or ExtendedErrorCode.
	var code sqlite3.ErrorCode
	var se *sqlite3.Error
	var ext sqlite3.ExtendedErrorCode
	switch {
	case errors.As(err, &se):
		code = se.Code()
	case errors.As(err, &ext):
		code = ext.Code()
	case errors.As(err, &code):
	default:
		return sqlitedialect.KindOther
	}
	switch code {
	case sqlite3.FULL:
		return sqlitedialect.KindFull
	case sqlite3.BUSY, sqlite3.LOCKED:
		return sqlitedialect.KindBusy
	case sqlite3.NOTADB, sqlite3.CORRUPT:
		return sqlitedialect.KindNotDatabase
	case sqlite3.READONLY:
		return sqlitedialect.KindReadOnly
	}
	return sqlitedialect.KindOther
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
)

// order is the one record order of List and FindRecent.
const order = ` ORDER BY created_at DESC, tool DESC, key DESC, layer DESC`

// findRecent is FindRecent's statement: the re-planning window of one
// (tenant, layer, session, tool, fingerprint). It names its index: without
// statistics SQLite would rather read a list index (records_tool) in the
// ORDER BY's order, every record of the tool in the window, than sort the
// few of one session and fingerprint.
const findRecent = `SELECT ` + columns + ` FROM records INDEXED BY records_recent
		WHERE tenant = ? AND layer = ? AND session = ? AND tool = ? AND fingerprint = ?
			AND created_at >= ?` + order

// Get implements ledger.Store.
func (s *Store) Get(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	r, err := s.getRaw(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: get %s key %s: %w", id.Tool, ledger.ShortHash(id.Key), ledger.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get: %w", s.classify(err))
	}
	return r, nil
}

// FindRecent implements ledger.Store.
func (s *Store) FindRecent(ctx context.Context, q ledger.RecentQuery) ([]*ledger.Record, error) {
	if err := ledger.ValidateTenant(q.Tenant); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, findRecent,
		q.Tenant, q.Layer, q.Session, q.Tool, q.Fingerprint, nanos(q.Since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: find recent: %w", s.classify(err))
	}
	recs, err := scanAll(rows, -1)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find recent: %w", s.classify(err))
	}
	return recs, nil
}

// List implements ledger.Store. The cursor is a row-value bound on the
// (created_at, tool, key, layer) order, so pages stay stable while records are
// added.
func (s *Store) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	if err := ledger.ValidateTenant(f.Tenant); err != nil {
		return ledger.Page{}, err
	}
	query, args, limit, err := listQuery(f)
	if err != nil {
		return ledger.Page{}, err
	}
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return ledger.Page{}, fmt.Errorf("sqlite: list: %w", s.classify(err))
	}
	recs, err := scanAll(rows, limit+1)
	if err != nil {
		return ledger.Page{}, fmt.Errorf("sqlite: list: %w", s.classify(err))
	}
	var p ledger.Page
	if len(recs) > limit {
		recs = recs[:limit]
		p.Next = ledger.EncodeCursor(recs[limit-1])
	}
	p.Records = recs
	return p, nil
}

// listQuery is List's statement for f, its arguments and the page size.
func listQuery(f ledger.Filter) (string, []any, int, error) {
	var where strings.Builder
	where.WriteString(`SELECT ` + columns + ` FROM records INDEXED BY ` + listIndex(f) + ` WHERE tenant = ?`)
	args := []any{f.Tenant}
	add := func(cond string, v ...any) {
		where.WriteString(" AND ")
		where.WriteString(cond)
		args = append(args, v...)
	}
	if f.Layer != "" {
		add("layer = ?", f.Layer)
	}
	if f.Session != "" {
		add("session = ?", f.Session)
	}
	if f.Tool != "" {
		add("tool = ?", f.Tool)
	}
	if f.Key != "" {
		add("key = ?", f.Key)
	}
	if f.State != "" {
		if !f.State.Valid() {
			return "", nil, 0, fmt.Errorf("sqlite: list: unknown state %q", f.State)
		}
		add("state = ?", string(f.State))
	}
	if !f.Since.IsZero() {
		add("created_at >= ?", nanos(f.Since))
	}
	if f.Cursor != "" {
		c, err := ledger.DecodeCursor(f.Cursor)
		if err != nil {
			return "", nil, 0, err
		}
		add("(created_at, tool, key, layer) < (?, ?, ?, ?)", nanos(c.CreatedAt), c.Tool, c.Key, c.Layer)
	}
	limit := f.PageSize()
	where.WriteString(order + ` LIMIT ?`)
	// One extra row tells whether another page follows.
	args = append(args, limit+1)
	return where.String(), args, limit, nil
}

// listIndex is the index a List of f reads, named so that the plan does
// not hang on statistics SQLite does not keep: the narrowest filter first
// (a key has a few records, a session a few hundred, a state or a tool
// any number), each index in List's order past its filter, so a page
// reads its rows and no more.
func listIndex(f ledger.Filter) string {
	switch {
	case f.Key != "":
		return "records_key"
	case f.Session != "":
		return "records_session"
	case f.State != "":
		return "records_state"
	case f.Tool != "":
		return "records_tool"
	}
	return "records_list"
}

func scanAll(rows *sql.Rows, capHint int) ([]*ledger.Record, error) {
	defer func() { _ = rows.Close() }() // a read: rows.Err reports how it ended
	var recs []*ledger.Record
	if capHint > 0 {
		recs = make([]*ledger.Record, 0, capHint)
	}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, rows.Err()
}

package postgres

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// recordCols is the column list every query that returns records selects,
// in the order scanRecord reads them.
// selectRecord reads one record by its identity.
const selectRecord = `SELECT ` + recordCols + ` FROM records
	WHERE tenant = $1 AND layer = $2 AND tool = $3 AND key = $4`

// findRecent is FindRecent's statement: the re-planning window of one
// (tenant, layer, session, tool, fingerprint), newest first.
const findRecent = `SELECT ` + recordCols + ` FROM records
	WHERE tenant = $1 AND layer = $2 AND session = $3 AND tool = $4 AND fingerprint = $5 AND created_at >= $6
	ORDER BY created_at DESC, tool DESC, key DESC, layer DESC`

const recordCols = `tenant, layer, tool, key, session, fingerprint, arguments, state, attempts, fence,
	result, compacted, error_kind, error_message, owner, lease_until,
	approval, trace_id, span_id, reuse_policy, tombstone, created_at, updated_at, expires_at, op_token, watched,
	reconciled, findings, finding_count, reconcile_at`

// rowMeta is what a row holds beyond the record.
type rowMeta struct {
	token   []byte // of the write that produced the row
	watched bool   // a follower elsewhere waits for it
}

// scanRecord reads one row of recordCols.
func scanRecord(row pgx.Row) (*ledger.Record, rowMeta, error) {
	var (
		r          ledger.Record
		state      string
		policy     string
		leaseUntil *time.Time
		approval   []byte
		meta       rowMeta
		rf         rawFindings
	)
	err := row.Scan(&r.Tenant, &r.Layer, &r.Tool, &r.Key, &r.Session, &r.Fingerprint, &r.Arguments, &state, &r.Attempts, &r.Fence,
		&r.Result, &r.Compacted, &r.ErrorKind, &r.ErrorMessage, &r.Owner, &leaseUntil,
		&approval, &r.TraceID, &r.SpanID, &policy, &r.Tombstone, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt, &meta.token, &meta.watched,
		&rf.reconciled, &rf.findings, &r.FindingCount, &rf.due)
	if err != nil {
		return nil, meta, err
	}
	if err := rf.decode(&r); err != nil {
		return nil, meta, err
	}
	r.State = ledger.State(state)
	r.ReusePolicy = ledger.ReusePolicy(policy)
	if leaseUntil != nil {
		r.LeaseUntil = leaseUntil.UTC()
	}
	if r.Approval, err = decodeApproval(r.Tool, approval); err != nil {
		return nil, meta, err
	}
	r.CreatedAt = r.CreatedAt.UTC()
	r.UpdatedAt = r.UpdatedAt.UTC()
	r.ExpiresAt = r.ExpiresAt.UTC()
	return &r, meta, nil
}

// findingCols are the reconciliation columns, in the order rawFindings
// reads them (finding_count into the record).
const findingCols = `reconciled, findings, finding_count, reconcile_at`

// rawFindings is what the reconciliation columns hold.
type rawFindings struct {
	reconciled, findings []byte
	due                  time.Time
}

// decode sets r's Reconciled, Findings and ReconcileAt; the epoch, the
// column's default, is "at once", the zero time.
func (rf *rawFindings) decode(r *ledger.Record) error {
	var err error
	if r.Reconciled, r.Findings, err = ledger.DecodeFindings(rf.reconciled, rf.findings); err != nil {
		return fmt.Errorf("postgres: %s: %w", r.Tool, err)
	}
	r.ReconcileAt = time.Time{}
	if rf.due.Unix() != 0 {
		r.ReconcileAt = rf.due.UTC()
	}
	return nil
}

// decodeApproval decodes the approval column (nil when NULL).
func decodeApproval(tool string, raw []byte) (*ledger.Approval, error) {
	if raw == nil {
		return nil, nil
	}
	var a ledger.Approval
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("postgres: decode approval of %s: %w", tool, err)
	}
	return &a, nil
}

// scanRecords reads every row of recordCols.
func scanRecords(rows pgx.Rows) ([]*ledger.Record, error) {
	defer rows.Close()
	var out []*ledger.Record
	for rows.Next() {
		r, _, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// notifyPayload names id in notifications: the md5 of tenant, layer, tool
// and key, short and free of the 8000-byte payload limit whatever the tool
// name. A collision only wakes a follower that then reads its record again.
func notifyPayload(id ledger.ID) string {
	sum := md5.Sum([]byte(id.Tenant + "\x1f" + id.Layer + "\x1f" + id.Tool + "\x1f" + id.Key))
	return hex.EncodeToString(sum[:])
}

// Get returns the record of id or ledger.ErrNotFound.
func (s *Store) Get(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	rec, _, err := s.get(ctx, id)
	return rec, err
}

// get reads a record and its row's metadata, retrying while the
// connection is lost: a read is always safe to repeat.
func (s *Store) get(ctx context.Context, id ledger.ID) (*ledger.Record, rowMeta, error) {
	var (
		rec  *ledger.Record
		meta rowMeta
	)
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			var err error
			rec, meta, err = scanRecord(c.QueryRow(ctx, selectRecord, id.Tenant, id.Layer, id.Tool, id.Key))
			return err
		})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, meta, fmt.Errorf("%w: tenant %q layer %q tool %q key %s", ledger.ErrNotFound, id.Tenant, id.Layer, id.Tool, ledger.ShortHash(id.Key))
	}
	if err != nil {
		return nil, meta, fmt.Errorf("postgres: get: %w", err)
	}
	return rec, meta, nil
}

// FindRecent returns the records of (tenant, layer, session, tool,
// fingerprint) created at or after q.Since, newest first. The layer matches
// exactly, the empty one included.
func (s *Store) FindRecent(ctx context.Context, q ledger.RecentQuery) ([]*ledger.Record, error) {
	if err := ledger.ValidateTenant(q.Tenant); err != nil {
		return nil, err
	}
	var out []*ledger.Record
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			rows, err := c.Query(ctx, findRecent,
				q.Tenant, q.Layer, q.Session, q.Tool, q.Fingerprint, q.Since.UTC())
			if err != nil {
				return err
			}
			out, err = scanRecords(rows)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: find recent: %w", err)
	}
	return out, nil
}

// List returns one page of a tenant's records, newest first by
// (CreatedAt, Tool, Key, Layer), and the cursor of the next page.
func (s *Store) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	if err := ledger.ValidateTenant(f.Tenant); err != nil {
		return ledger.Page{}, err
	}
	if f.State != "" && !f.State.Valid() {
		return ledger.Page{}, fmt.Errorf("postgres: list: unknown state %q", f.State)
	}
	sql, args, limit, err := listQuery(f)
	if err != nil {
		return ledger.Page{}, err
	}
	var recs []*ledger.Record
	err = s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			rows, err := c.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			recs, err = scanRecords(rows)
			return err
		})
	})
	if err != nil {
		return ledger.Page{}, fmt.Errorf("postgres: list: %w", err)
	}
	var page ledger.Page
	if len(recs) > limit {
		recs = recs[:limit]
		page.Next = ledger.EncodeCursor(recs[limit-1])
	}
	page.Records = recs
	return page, nil
}

// listQuery is List's statement for f, its arguments and the page size.
func listQuery(f ledger.Filter) (string, []any, int, error) {
	where := []string{"tenant = $1"}
	args := []any{f.Tenant}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.Layer != "" {
		add("layer = $?", f.Layer)
	}
	if f.Session != "" {
		add("session = $?", f.Session)
	}
	if f.Tool != "" {
		add("tool = $?", f.Tool)
	}
	if f.Key != "" {
		add("key = $?", f.Key)
	}
	if f.State != "" {
		add("state = $?", string(f.State))
	}
	if !f.Since.IsZero() {
		add("created_at >= $?", f.Since.UTC())
	}
	if f.Cursor != "" {
		cur, err := ledger.DecodeCursor(f.Cursor)
		if err != nil {
			return "", nil, 0, err
		}
		args = append(args, cur.CreatedAt.UTC(), cur.Tool, cur.Key, cur.Layer)
		n := len(args)
		where = append(where, fmt.Sprintf("(created_at, tool, key, layer) < ($%d, $%d, $%d, $%d)", n-3, n-2, n-1, n))
	}
	limit := f.PageSize()
	args = append(args, limit+1)
	sql := `SELECT ` + recordCols + ` FROM records WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY created_at DESC, tool DESC, key DESC, layer DESC LIMIT $` + strconv.Itoa(len(args))

	return sql, args, limit, nil
}

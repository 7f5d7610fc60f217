package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

const (
	insertClaim = `INSERT INTO records (tenant, tool, key, session, fingerprint,
		arguments, state, owner, lease_until, trace_id, span_id, reuse_policy,
		created_at, updated_at, expires_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (tenant, tool, key) DO NOTHING`

	// replaceExpired turns a settled record past its retention into a new
	// operation (the Reexecute policy). Tombstones are never replaced.
	replaceExpired = `UPDATE records SET session = ?, fingerprint = ?,
		arguments = ?, state = ?, attempts = 0, result = NULL, compacted = 0,
		error_kind = '', error_message = '', owner = ?, lease_until = ?,
		approval = NULL, trace_id = ?, span_id = ?, reuse_policy = ?,
		tombstone = 0, created_at = ?, updated_at = ?, expires_at = ?
	WHERE tenant = ? AND tool = ? AND key = ? AND tombstone = 0
		AND expires_at <= ? AND state IN ` + settledList + `
	RETURNING ` + columns

	// takeOver hands a RETRYABLE record (the call provably never reached
	// the tool) to a new owner.
	takeOver = `UPDATE records SET state = 'PROCESSING', owner = ?,
		lease_until = ?, result = NULL, compacted = 0, error_kind = '',
		error_message = '', trace_id = ?, span_id = ?, updated_at = ?,
		expires_at = ?
	WHERE tenant = ? AND tool = ? AND key = ? AND tombstone = 0
		AND state = 'RETRYABLE' AND fingerprint = ?
	RETURNING ` + columns

	selectRecord = `SELECT ` + columns + ` FROM records
	WHERE tenant = ? AND tool = ? AND key = ?`

	// A NULL owner, result or error keeps the stored value: the owner
	// changes only when the record enters PROCESSING, and a transition that
	// says nothing about the result or error leaves them as they were.
	transition = `UPDATE records SET state = ?, owner = coalesce(?, owner),
		lease_until = ?, result = coalesce(?, result),
		compacted = CASE WHEN ? IS NULL THEN compacted ELSE ? END,
		error_kind = coalesce(?, error_kind),
		error_message = coalesce(?, error_message),
		approval = coalesce(?, approval), attempts = attempts + ?,
		updated_at = ?
	WHERE tenant = ? AND tool = ? AND key = ? AND tombstone = 0
		AND state = ? AND (? = 0 OR owner = ?)
	RETURNING ` + columns

	renew = `UPDATE records SET lease_until = ?, updated_at = ?
	WHERE tenant = ? AND tool = ? AND key = ? AND tombstone = 0
		AND state = 'PROCESSING' AND owner = ?`

	expireLeases = `UPDATE records SET state = 'UNKNOWN', error_kind = ?,
		error_message = 'the lease of ' || owner || ' ended before a result was recorded',
		lease_until = 0, updated_at = ?
	WHERE state = 'PROCESSING' AND lease_until <= ?
	RETURNING tenant, tool, key`

	// Purge matches settled records past retention, or not updated since
	// a cut-off when one is given.
	purgeMatch = `state IN ` + settledList + `
		AND (expires_at <= ? OR (? AND updated_at < ?))`

	purgeDelete = `DELETE FROM records
	WHERE (tombstone = 1 OR reuse_policy <> 'verify') AND ` + purgeMatch

	// A tombstone keeps identity and fingerprint for one more retention
	// period, measured from now.
	purgeTombstone = `UPDATE records SET tombstone = 1, session = '',
		arguments = NULL, result = NULL, compacted = 0, error_kind = '',
		error_message = '', approval = NULL, trace_id = '', span_id = '',
		updated_at = ?,
		expires_at = ? + (expires_at - created_at)
	WHERE tombstone = 0 AND reuse_policy = 'verify' AND ` + purgeMatch
)

// Claim implements ledger.Store. The INSERT decides: on a conflict the
// existing row is replaced only when expired, taken over only when
// RETRYABLE, and otherwise returned to the follower.
func (s *Store) Claim(ctx context.Context, req ledger.ClaimRequest) (ledger.Claim, error) {
	if err := req.Validate(); err != nil {
		return ledger.Claim{}, err
	}
	lease := durationOr(req.Lease, ledger.DefaultLease)
	retention := durationOr(req.Retention, ledger.DefaultRetention)
	policy := req.ReusePolicy
	if policy == "" {
		policy = ledger.Reexecute
	}
	state := ledger.StateProcessing
	if req.NeedsApproval {
		state = ledger.StatePendingApproval
	}
	// Most claims of an existing key are duplicates. A plain read settles
	// them without the write lock: when the record exists and can be
	// neither taken over nor replaced, the caller is a follower as of that
	// read. Creating, taking over or replacing a record is always decided
	// by the conflicting INSERT below, never by this read. While other
	// writes are in flight the read is made here, so that a duplicate does
	// not wait for their commit; otherwise the op makes it on the write
	// connection, whose cache the last write left warm.
	if s.writing() {
		if r, err := s.getRaw(ctx, req.ID); err == nil && !claimable(r, req.Fingerprint, s.opts.Now()) {
			return follow(r, req)
		}
	}
	var out ledger.Claim
	var claimErr error
	// Alone, the INSERT runs as its own transaction (writeSingle): a new
	// key costs one statement and one fsync.
	err := s.writeSingle(ctx, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		out, claimErr = ledger.Claim{}, nil
		if tx.autocommit() {
			// A read outside a transaction: no write lock.
			r, err := scanRecord(tx.readRow(ctx, selectRecord, req.Tenant, req.Tool, req.Key))
			if err == nil && !claimable(r, req.Fingerprint, now) {
				out, claimErr = follow(r, req)
				return nil, nil
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("sqlite: claim: read existing record: %w", err)
			}
		}
		var leaseUntil int64
		if state == ledger.StateProcessing {
			leaseUntil = nanos(now.Add(lease))
		}
		n, exp := nanos(now), nanos(now.Add(retention))
		res, err := tx.ExecContext(ctx, insertClaim,
			req.Tenant, req.Tool, req.Key, req.Session, req.Fingerprint,
			blob(req.Arguments), string(state), req.Owner, leaseUntil, req.TraceID,
			req.SpanID, string(policy), n, n, exp)
		if err != nil {
			return nil, fmt.Errorf("sqlite: claim: %w", err)
		}
		if inserted, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("sqlite: claim: %w", err)
		} else if inserted == 1 {
			// The new row holds exactly what was bound: no need to read
			// it back.
			out = ledger.Claim{Won: true, Record: &ledger.Record{
				ID: req.ID, Session: req.Session, Fingerprint: req.Fingerprint,
				Arguments: cloneRaw(req.Arguments), State: state, Owner: req.Owner,
				LeaseUntil: fromNanos(leaseUntil), TraceID: req.TraceID, SpanID: req.SpanID,
				ReusePolicy: policy, CreatedAt: fromNanos(n), UpdatedAt: fromNanos(n),
				ExpiresAt: fromNanos(exp),
			}}
			return nil, nil
		}
		if tx.autocommit() {
			return nil, errNeedTx
		}
		r, err := scanRecord(tx.QueryRowContext(ctx, replaceExpired,
			req.Session, req.Fingerprint, blob(req.Arguments), string(state),
			req.Owner, leaseUntil, req.TraceID, req.SpanID, string(policy), n, n, exp,
			req.Tenant, req.Tool, req.Key, n))
		if err == nil {
			out = ledger.Claim{Record: r, Won: true}
			return []ledger.ID{req.ID}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: claim: replace expired record: %w", err)
		}
		r, err = scanRecord(tx.QueryRowContext(ctx, takeOver,
			req.Owner, nanos(now.Add(lease)), req.TraceID, req.SpanID, n, exp,
			req.Tenant, req.Tool, req.Key, req.Fingerprint))
		if err == nil {
			out = ledger.Claim{Record: r, Won: true}
			return []ledger.ID{req.ID}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: claim: take over retryable record: %w", err)
		}
		r, err = scanRecord(tx.QueryRowContext(ctx, selectRecord, req.Tenant, req.Tool, req.Key))
		if err != nil {
			return nil, fmt.Errorf("sqlite: claim: read existing record: %w", err)
		}
		// A reused key is reported to the caller but is not a failed
		// write: the batch need not roll anything back for it.
		out, claimErr = follow(r, req)
		return nil, nil
	})
	if err != nil {
		return ledger.Claim{}, err
	}
	return out, claimErr
}

// claimable reports whether a Claim with fingerprint fp would take r over
// (RETRYABLE, same operation) or replace it (settled and expired).
func claimable(r *ledger.Record, fp string, now time.Time) bool {
	if r.Tombstone {
		return false
	}
	return (r.State.Settled() && !r.ExpiresAt.After(now)) ||
		(r.State == ledger.StateRetryable && r.Fingerprint == fp)
}

// follow is the outcome for a caller that did not win r.
func follow(r *ledger.Record, req ledger.ClaimRequest) (ledger.Claim, error) {
	c := ledger.Claim{Record: r}
	if r.Fingerprint != req.Fingerprint {
		return c, fmt.Errorf("sqlite: claim %s key %s: stored fingerprint %.12s, request %.12s: %w",
			req.Tool, ledger.ShortHash(req.Key), r.Fingerprint, req.Fingerprint, ledger.ErrKeyReused)
	}
	return c, nil
}

// Transition implements ledger.Store.
func (s *Store) Transition(ctx context.Context, t ledger.Transition) (*ledger.Record, error) {
	// The state table is consulted before storage is touched.
	if err := ledger.CheckTransition(t.From, t.To); err != nil {
		return nil, err
	}
	if err := t.ID.Validate(); err != nil {
		return nil, err
	}
	if t.To == ledger.StateProcessing && t.Owner == "" {
		return nil, errors.New("sqlite: transition to PROCESSING needs an owner")
	}
	approval, err := approvalJSON(t.Approval)
	if err != nil {
		return nil, err
	}
	checkOwner := 0
	if t.From == ledger.StateProcessing {
		checkOwner = 1
	}
	var rec *ledger.Record
	err = s.writeSingle(ctx, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		var leaseUntil int64
		var owner, kind, msg, result any
		if t.To == ledger.StateProcessing {
			leaseUntil = nanos(now.Add(durationOr(t.Lease, ledger.DefaultLease)))
			owner = t.Owner
			// A new execution starts without the last one's error.
			kind, msg = "", ""
		}
		if t.ErrorKind != "" || t.ErrorMessage != "" {
			kind, msg = t.ErrorKind, t.ErrorMessage
		}
		if t.Result != nil {
			result = []byte(t.Result)
		}
		r, err := scanRecord(tx.QueryRowContext(ctx, transition,
			string(t.To), owner, leaseUntil, result, result, t.Compacted,
			kind, msg, approval, t.AddAttempts, nanos(now),
			t.Tenant, t.Tool, t.Key, string(t.From), checkOwner, t.Owner))
		if err == nil {
			rec = r
			return []ledger.ID{t.ID}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: transition: %w", err)
		}
		if tx.autocommit() {
			// Tell why inside a transaction, from a consistent view.
			return nil, errNeedTx
		}
		cur, err := scanRecord(tx.QueryRowContext(ctx, selectRecord, t.Tenant, t.Tool, t.Key))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: transition %s -> %s of %s key %s: %w", t.From, t.To, t.Tool, ledger.ShortHash(t.Key), ledger.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: transition: %w", err)
		}
		return nil, mismatch(t, cur)
	})
	return rec, err
}

func mismatch(t ledger.Transition, cur *ledger.Record) error {
	what := fmt.Sprintf("sqlite: transition %s -> %s of %s key %s", t.From, t.To, t.Tool, ledger.ShortHash(t.Key))
	switch {
	case t.From == ledger.StateProcessing && cur.State == ledger.StateProcessing && !cur.Tombstone:
		return fmt.Errorf("%s: the lease belongs to %q, not %q: %w", what, cur.Owner, t.Owner, ledger.ErrLeaseLost)
	case t.From == ledger.StateProcessing:
		return fmt.Errorf("%s: the record is now %s: %w", what, cur.State, ledger.ErrLeaseLost)
	case cur.Tombstone:
		return fmt.Errorf("%s: the record is a tombstone: %w", what, ledger.ErrStateChanged)
	}
	return fmt.Errorf("%s: the record is %s: %w", what, cur.State, ledger.ErrStateChanged)
}

// Renew implements ledger.Store.
func (s *Store) Renew(ctx context.Context, id ledger.ID, owner string, lease time.Duration) error {
	if err := id.Validate(); err != nil {
		return err
	}
	lease = durationOr(lease, ledger.DefaultLease)
	return s.writeSingle(ctx, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		res, err := tx.ExecContext(ctx, renew, nanos(now.Add(lease)), nanos(now), id.Tenant, id.Tool, id.Key, owner)
		if err != nil {
			return nil, fmt.Errorf("sqlite: renew: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return nil, err
		}
		if tx.autocommit() {
			return nil, errNeedTx
		}
		cur, err := scanRecord(tx.QueryRowContext(ctx, selectRecord, id.Tenant, id.Tool, id.Key))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: renew %s key %s: no such record: %w", id.Tool, ledger.ShortHash(id.Key), ledger.ErrLeaseLost)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: renew: %w", err)
		}
		return nil, fmt.Errorf("sqlite: renew %s key %s: the record is %s owned by %q, not %q: %w",
			id.Tool, ledger.ShortHash(id.Key), cur.State, cur.Owner, owner, ledger.ErrLeaseLost)
	})
}

// ExpireLeases implements ledger.Store.
func (s *Store) ExpireLeases(ctx context.Context) (int, error) {
	var n int
	err := s.writeSingle(ctx, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		n = 0
		rows, err := tx.QueryContext(ctx, expireLeases, ledger.KindLeaseExpired, nanos(now), nanos(now))
		if err != nil {
			return nil, fmt.Errorf("sqlite: expire leases: %w", err)
		}
		defer rows.Close()
		var ids []ledger.ID
		for rows.Next() {
			var id ledger.ID
			if err := rows.Scan(&id.Tenant, &id.Tool, &id.Key); err != nil {
				return nil, fmt.Errorf("sqlite: expire leases: %w", err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: expire leases: %w", err)
		}
		n = len(ids)
		return ids, nil
	})
	return n, err
}

// Purge implements ledger.Store. Tombstones matched by an earlier purge are
// deleted before new ones are made, so one call never does both to a record.
func (s *Store) Purge(ctx context.Context, p ledger.PurgeRequest) (int, error) {
	var n int
	err := s.write(ctx, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		n = 0
		byUpdate := !p.UpdatedBefore.IsZero()
		match := []any{nanos(p.ExpiredBy), byUpdate, nanos(p.UpdatedBefore)}
		if p.ExpiredBy.IsZero() {
			// The zero time would match every record stored with 0.
			match[0] = int64(-1) << 62
		}
		res, err := tx.ExecContext(ctx, purgeDelete, match...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: purge: %w", err)
		}
		deleted, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("sqlite: purge: %w", err)
		}
		res, err = tx.ExecContext(ctx, purgeTombstone, append([]any{nanos(now), nanos(now)}, match...)...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: purge: %w", err)
		}
		tombstoned, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("sqlite: purge: %w", err)
		}
		n = int(deleted + tombstoned)
		return nil, nil
	})
	return n, err
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

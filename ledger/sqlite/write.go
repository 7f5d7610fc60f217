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
	// A new key starts at fence 1, the column's default.
	insertClaim = `INSERT INTO records (tenant, layer, tool, key, session, fingerprint,
		arguments, state, owner, lease_until, trace_id, span_id, reuse_policy,
		created_at, updated_at, expires_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (tenant, layer, tool, key) DO NOTHING`

	// replaceExpired turns a settled record past its retention into a new
	// operation (the Reexecute policy). Tombstones are never replaced. The
	// fence still grows: an owner of the old operation stays stale.
	replaceExpired = `UPDATE records SET session = ?, fingerprint = ?,
		arguments = ?, state = ?, attempts = 0, fence = fence + 1, result = NULL,
		compacted = 0, error_kind = '', error_message = '', owner = ?,
		lease_until = ?, approval = NULL, trace_id = ?, span_id = ?,
		reuse_policy = ?, tombstone = 0, created_at = ?, updated_at = ?,
		expires_at = ?, reconciled = NULL, findings = NULL, finding_count = 0,
		reconcile_at = 0
	WHERE tenant = ? AND layer = ? AND tool = ? AND key = ? AND tombstone = 0
		AND expires_at <= ? AND state IN ` + settledList + `
	RETURNING ` + columns

	// reclaim hands a record on which nothing ran to a new owner, keeping
	// Attempts and CreatedAt: a RETRYABLE record (the call provably never
	// reached the tool) to the same operation, which keeps its session,
	// arguments and approval; a REJECTED record to whatever operation
	// claims it now. SET expressions read the row as it was, so the CASEs
	// see the old state. A new run is not reconciled; a RETRYABLE record
	// keeps its findings (a reconciler found it not run), a new operation
	// starts without.
	reclaim = `UPDATE records SET state = ?, owner = ?, lease_until = ?,
		fence = fence + 1, result = NULL, compacted = 0, error_kind = '',
		error_message = '', reconciled = NULL, reconcile_at = 0,
		findings = CASE state WHEN 'REJECTED' THEN NULL ELSE findings END,
		finding_count = CASE state WHEN 'REJECTED' THEN 0 ELSE finding_count END,
		session = CASE state WHEN 'REJECTED' THEN ? ELSE session END,
		fingerprint = CASE state WHEN 'REJECTED' THEN ? ELSE fingerprint END,
		arguments = CASE state WHEN 'REJECTED' THEN ? ELSE arguments END,
		reuse_policy = CASE state WHEN 'REJECTED' THEN ? ELSE reuse_policy END,
		approval = CASE state WHEN 'REJECTED' THEN NULL ELSE approval END,
		trace_id = ?, span_id = ?, updated_at = ?, expires_at = ?
	WHERE tenant = ? AND layer = ? AND tool = ? AND key = ? AND tombstone = 0
		AND (state = 'REJECTED' OR (state = 'RETRYABLE' AND fingerprint = ?))
	RETURNING ` + columns

	selectRecord = `SELECT ` + columns + ` FROM records
	WHERE tenant = ? AND layer = ? AND tool = ? AND key = ?`

	// A NULL owner, result or error keeps the stored value: the owner
	// changes only when the record enters PROCESSING, and a transition that
	// says nothing about the result or error leaves them as they were. The
	// last six parameters are the lease check (owner and fence, leaving a
	// leased state), the fence check (also for a fenced late result from
	// UNKNOWN, and a finding) and a finding's check of the findings it
	// was read with. A NULL updated_at keeps it (an inconclusive finding),
	// and a NULL finding column keeps the stored value.
	transition = `UPDATE records SET state = ?, owner = coalesce(?, owner),
		lease_until = ?, fence = fence + ?, result = coalesce(?, result),
		compacted = CASE WHEN ? IS NULL THEN compacted ELSE ? END,
		error_kind = coalesce(?, error_kind),
		error_message = coalesce(?, error_message),
		approval = coalesce(?, approval), attempts = attempts + ?,
		updated_at = coalesce(?, updated_at),
		reconciled = coalesce(?, reconciled), findings = coalesce(?, findings),
		finding_count = finding_count + ?, reconcile_at = coalesce(?, reconcile_at)
	WHERE tenant = ? AND layer = ? AND tool = ? AND key = ? AND tombstone = 0
		AND state = ? AND (? = 0 OR owner = ?) AND (? = 0 OR fence = ?)
		AND (? = 0 OR finding_count = ?)
	RETURNING ` + columns

	renew = `UPDATE records SET lease_until = ?, updated_at = ?
	WHERE tenant = ? AND layer = ? AND tool = ? AND key = ? AND tombstone = 0
		AND state IN ('PROCESSING', 'PENDING_APPROVAL') AND owner = ? AND fence = ?`

	// An expired PROCESSING lease may have run the call (UNKNOWN); an
	// expired PENDING_APPROVAL lease ran nothing (REJECTED). Owner and
	// fence stay, so the late result of that owner can still be matched.
	expireLeases = `UPDATE records SET
		state = CASE state WHEN 'PROCESSING' THEN 'UNKNOWN' ELSE 'REJECTED' END,
		error_kind = CASE state WHEN 'PROCESSING' THEN ? ELSE ? END,
		error_message = CASE state
			WHEN 'PROCESSING' THEN 'the lease of ' || owner || ' ended before a result was recorded'
			ELSE 'the approval lease of ' || owner || ' ended before anyone answered' END,
		lease_until = 0, updated_at = ?
	WHERE state IN ('PROCESSING', 'PENDING_APPROVAL') AND lease_until <= ?
	RETURNING tenant, layer, tool, key`

	// Purge matches settled records past retention, or not updated since
	// a cut-off when one is given.
	purgeMatch = `state IN ` + settledList + `
		AND (expires_at <= ? OR (? AND updated_at < ?))
		AND (? = '' OR tenant = ?)`

	// A REJECTED record ran nothing, so even under the Verify policy there
	// is nothing for a tombstone to guard: it is deleted. A tombstone made
	// by this Purge (updated at or after its start, the first parameter)
	// is not due again within it. The last parameter is the batch's size.
	purgeDelete = `DELETE FROM records WHERE id IN (SELECT id FROM records
	WHERE (tombstone = 0 OR updated_at < ?)
		AND (tombstone = 1 OR reuse_policy <> 'verify' OR state = 'REJECTED') AND ` + purgeMatch + `
	LIMIT ?)`

	// A tombstone keeps identity and fingerprint for one more retention
	// period, measured from now.
	purgeTombstone = `UPDATE records SET tombstone = 1, session = '',
		arguments = NULL, result = NULL, compacted = 0, error_kind = '',
		error_message = '', approval = NULL, trace_id = '', span_id = '',
		reconciled = NULL, findings = NULL, finding_count = 0, reconcile_at = 0,
		updated_at = ?,
		expires_at = ? + (expires_at - created_at)
	WHERE id IN (SELECT id FROM records
	WHERE tombstone = 0 AND reuse_policy = 'verify' AND state <> 'REJECTED' AND ` + purgeMatch + `
	LIMIT ?)`

	// purgePreview counts what purgeDelete and purgeTombstone would change
	// together: every record purgeMatch matches.
	purgePreview = `SELECT state, count(*), min(created_at), max(created_at) FROM records
	WHERE ` + purgeMatch + ` GROUP BY state`
)

// purgeBatch is how many records one transaction of Purge removes at most:
// a purge of a large backlog is many short transactions, so claims of
// other callers are never held up behind one long delete.
const purgeBatch = 1000

// Purge sizes its batches so that each holds the write lock about
// purgeHold (halving a batch that took longer, doubling one that took
// less than half, from minPurgeBatch to purgeBatch), and after each one
// leaves the lock free as long as the batch held it, at least
// minPurgeRest: a writer of another process waits in SQLite's busy
// handler, which sleeps between tries, and must find the lock free when
// it wakes. The rest begins with a checkpoint (purgeCheckpoint).
const (
	purgeHold     = 20 * time.Millisecond
	minPurgeRest  = 5 * time.Millisecond
	minPurgeBatch = 50
)

// Claim implements ledger.Store. The INSERT decides: on a conflict the
// existing row is replaced only when expired, reclaimed only when RETRYABLE
// (same fingerprint) or REJECTED, and otherwise returned to the follower.
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
	state := req.State()
	// Most claims of an existing key are duplicates. A plain read settles
	// them without the write lock: when the record exists and can be
	// neither reclaimed nor replaced, the caller is a follower as of that
	// read. Creating, reclaiming or replacing a record is always decided
	// by the conflicting INSERT below, never by this read. While other
	// writes are in flight the read is made here, so that a duplicate does
	// not wait for their commit; otherwise the op makes it on the write
	// connection, whose cache the last write left warm.
	if s.writing() {
		if r, err := s.getRaw(ctx, req.ID); err == nil && !ledger.Claimable(r, req.Fingerprint, s.opts.Now()) {
			return ledger.Follow("sqlite", r, req)
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
			r, err := scanRecord(tx.readRow(ctx, selectRecord, req.Tenant, req.Layer, req.Tool, req.Key))
			if err == nil && !ledger.Claimable(r, req.Fingerprint, now) {
				out, claimErr = ledger.Follow("sqlite", r, req)
				return nil, nil
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("sqlite: claim: read existing record: %w", err)
			}
		}
		leaseUntil := nanos(now.Add(lease))
		n, exp := nanos(now), nanos(now.Add(retention))
		res, err := tx.ExecContext(ctx, insertClaim,
			req.Tenant, req.Layer, req.Tool, req.Key, req.Session, req.Fingerprint,
			blob(req.Arguments), string(state), req.Owner, leaseUntil, req.TraceID,
			req.SpanID, string(policy), n, n, exp)
		if err != nil {
			return nil, fmt.Errorf("sqlite: claim: %w", err)
		}
		if inserted, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("sqlite: claim: %w", err)
		} else if inserted == 1 {
			// The new row holds exactly what was bound and the column
			// defaults: no need to read it back.
			out = ledger.Claim{Won: true, Record: &ledger.Record{
				ID: req.ID, Session: req.Session, Fingerprint: req.Fingerprint,
				Arguments: cloneRaw(req.Arguments), State: state, Fence: 1, Owner: req.Owner,
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
			req.Tenant, req.Layer, req.Tool, req.Key, n))
		if err == nil {
			out = ledger.Claim{Record: r, Won: true}
			return []ledger.ID{req.ID}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: claim: replace expired record: %w", err)
		}
		r, err = scanRecord(tx.QueryRowContext(ctx, reclaim,
			string(state), req.Owner, leaseUntil,
			req.Session, req.Fingerprint, blob(req.Arguments), string(policy),
			req.TraceID, req.SpanID, n, exp,
			req.Tenant, req.Layer, req.Tool, req.Key, req.Fingerprint))
		if err == nil {
			out = ledger.Claim{Record: r, Won: true}
			return []ledger.ID{req.ID}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: claim: reclaim record: %w", err)
		}
		r, err = scanRecord(tx.QueryRowContext(ctx, selectRecord, req.Tenant, req.Layer, req.Tool, req.Key))
		if err != nil {
			return nil, fmt.Errorf("sqlite: claim: read existing record: %w", err)
		}
		// A reused key is reported to the caller but is not a failed
		// write: the batch need not roll anything back for it.
		out, claimErr = ledger.Follow("sqlite", r, req)
		return nil, nil
	})
	if err != nil {
		return ledger.Claim{}, err
	}
	return out, claimErr
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
	if t.To.Waiting() && t.Owner == "" {
		return nil, fmt.Errorf("sqlite: transition to %s needs an owner for its lease (see process.NewOwner)", t.To)
	}
	approval, err := approvalJSON(t.Approval)
	if err != nil {
		return nil, err
	}
	rule := t.Rule()
	checkOwner, checkFence, addFence := bit(rule.CheckOwner), bit(rule.CheckFence), bit(rule.BumpFence)
	checkFindings, findingCount := bit(rule.CheckFindings), 0
	if t.Finding != nil {
		findingCount = t.Finding.Count
	}
	var rec *ledger.Record
	lazy := ledger.Deferrable(max(s.opts.Durability, ledger.DurabilityOf(ctx)), t)
	err = s.writeSingleAs(ctx, lazy, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		var leaseUntil int64
		var owner, kind, msg, result any
		if t.To.Waiting() {
			leaseUntil = nanos(now.Add(durationOr(t.Lease, ledger.DefaultLease)))
			owner = rule.Owner
		}
		if rule.ClearError {
			kind, msg = "", ""
		}
		if t.ErrorKind != "" || t.ErrorMessage != "" {
			kind, msg = t.ErrorKind, t.ErrorMessage
		}
		if t.Result != nil {
			result = []byte(t.Result)
		}
		var updated, reconciled, findings, due any = nanos(now), nil, nil, nil
		if rule.KeepUpdated {
			updated = nil
		}
		if t.Finding != nil {
			_, _, rawRec, rawFindings, at, err := t.Finding.Encode(now)
			if err != nil {
				return nil, fmt.Errorf("sqlite: transition: %w", err)
			}
			findings = string(rawFindings)
			if rawRec != nil {
				reconciled = string(rawRec)
			}
			if !at.IsZero() {
				due = nanos(at)
			}
		}
		r, err := scanRecord(tx.QueryRowContext(ctx, transition,
			string(t.To), owner, leaseUntil, addFence, result, result, t.Compacted,
			kind, msg, approval, t.AddAttempts, updated, reconciled, findings, checkFindings, due,
			t.Tenant, t.Layer, t.Tool, t.Key, string(t.From), checkOwner, t.Owner, checkFence, t.Fence,
			checkFindings, findingCount))
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
		cur, err := scanRecord(tx.QueryRowContext(ctx, selectRecord, t.Tenant, t.Layer, t.Tool, t.Key))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: transition %s -> %s of %s key %s: %w", t.From, t.To, t.Tool, ledger.ShortHash(t.Key), ledger.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: transition: %w", err)
		}
		return nil, ledger.Mismatch("sqlite", t, cur)
	})
	return rec, err
}

// Renew implements ledger.Store.
func (s *Store) Renew(ctx context.Context, l ledger.Lease, d time.Duration) error {
	if err := l.ID.Validate(); err != nil {
		return err
	}
	d = durationOr(d, ledger.DefaultLease)
	return s.writeSingle(ctx, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		res, err := tx.ExecContext(ctx, renew, nanos(now.Add(d)), nanos(now), l.Tenant, l.Layer, l.Tool, l.Key, l.Owner, l.Fence)
		if err != nil {
			return nil, fmt.Errorf("sqlite: renew: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return nil, err
		}
		if tx.autocommit() {
			return nil, errNeedTx
		}
		cur, err := scanRecord(tx.QueryRowContext(ctx, selectRecord, l.Tenant, l.Layer, l.Tool, l.Key))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: renew %s key %s: no such record: %w", l.Tool, ledger.ShortHash(l.Key), ledger.ErrLeaseLost)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: renew: %w", err)
		}
		return nil, fmt.Errorf("sqlite: renew %s key %s: the record is %s, owner %q at fence %d, not %q at fence %d: %w",
			l.Tool, ledger.ShortHash(l.Key), cur.State, cur.Owner, cur.Fence, l.Owner, l.Fence, ledger.ErrLeaseLost)
	})
}

// ExpireLeases implements ledger.Store.
func (s *Store) ExpireLeases(ctx context.Context) (int, error) {
	var n int
	err := s.writeSingle(ctx, func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
		n = 0
		rows, err := tx.QueryContext(ctx, expireLeases, ledger.KindLeaseExpired, ledger.KindApprovalExpired, nanos(now), nanos(now))
		if err != nil {
			return nil, fmt.Errorf("sqlite: expire leases: %w", err)
		}
		// On the error paths; the end below checks its own Close, which
		// ends a writing statement (RETURNING).
		defer func() { _ = rows.Close() }()
		var ids []ledger.ID
		for rows.Next() {
			var id ledger.ID
			if err := rows.Scan(&id.Tenant, &id.Layer, &id.Tool, &id.Key); err != nil {
				return nil, fmt.Errorf("sqlite: expire leases: %w", err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: expire leases: %w", err)
		}
		if err := rows.Close(); err != nil {
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
	total := 0
	var start time.Time // of the first batch: tombstones made since are not due
	batch := purgeBatch
	for first := true; ; first = false {
		size := batch
		if p.Limit > 0 {
			size = min(size, p.Limit-total)
		}
		if size <= 0 {
			return total, s.purgeDone(ctx, total, nil)
		}
		n := 0
		var locked time.Time
		// A batch commits without an fsync of its own (a lazy op, see
		// behind.go): its hold of the write lock is then the deletes
		// alone, not the disk's fsync, which on a slow disk took
		// hundreds of milliseconds. A crash can only bring back expired
		// records, which the next purge removes; purgeDone makes the
		// purge durable before it returns.
		err := s.submit(ctx, &op{ctx: ctx, lazy: true, fn: func(ctx context.Context, tx execer, now time.Time) ([]ledger.ID, error) {
			n = 0
			locked = time.Now()
			if start.IsZero() {
				start = now
			}
			match := purgeArgs(p)
			res, err := tx.ExecContext(ctx, purgeDelete, append(append([]any{nanos(start)}, match...), size)...)
			if err != nil {
				return nil, fmt.Errorf("sqlite: purge: %w", err)
			}
			deleted, err := res.RowsAffected()
			if err != nil {
				return nil, fmt.Errorf("sqlite: purge: %w", err)
			}
			res, err = tx.ExecContext(ctx, purgeTombstone, append(append([]any{nanos(now), nanos(now)}, match...), size-int(deleted))...)
			if err != nil {
				return nil, fmt.Errorf("sqlite: purge: %w", err)
			}
			tombstoned, err := res.RowsAffected()
			if err != nil {
				return nil, fmt.Errorf("sqlite: purge: %w", err)
			}
			n = int(deleted + tombstoned)
			return nil, nil
		}})
		total += n
		if err != nil || n < size {
			return total, s.purgeDone(ctx, total, err)
		}
		// From the write lock taken to the commit done: the wait for
		// the lock is no part of a batch's hold.
		held := time.Since(locked)
		s.logger().Debug("sqlite: purge batch", "records", n, "held", held)
		switch {
		case held > purgeHold:
			batch = max(batch/2, minPurgeBatch)
		case held < purgeHold/2 && !first:
			batch = min(batch*2, purgeBatch)
		}
		resting := time.Now()
		s.purgeCheckpoint(ctx)
		rest := time.NewTimer(max(held, minPurgeRest) - time.Since(resting))
		select {
		case <-ctx.Done():
			rest.Stop()
			return total, ctx.Err()
		case <-rest.C:
		}
	}
}

// purgeDone ends a purge that removed total records and then met err:
// its batches, committed without an fsync, are made durable with one, and
// the log they wrote is checkpointed.
func (s *Store) purgeDone(ctx context.Context, total int, err error) error {
	if total == 0 {
		return err
	}
	if ferr := s.flush(); ferr != nil && err == nil {
		err = fmt.Errorf("sqlite: purge: %d records were removed but may not be on disk yet: %w", total, ferr)
	}
	s.purgeCheckpoint(ctx)
	return err
}

// purgeCheckpoint copies what the purge's last batch wrote to the
// write-ahead log into the database, so the purge pays for its own log.
// Left to SQLite's automatic checkpoint, those pages would be copied, and
// the database file fsynced, by whichever commit next finds the log past
// wal_autocheckpoint pages: often a call's claim, in this process or
// another. With the log all copied, the next writer starts it over.
//
// It runs on a read connection, between batches, as a PASSIVE checkpoint:
// it takes no write lock, so writers go on meanwhile, and it never waits;
// what a reader still needs stays in the log for a later checkpoint. A
// checkpoint that fails leaves the work to SQLite's automatic one, as
// before, so it is logged and the purge goes on: its deletes are
// committed either way.
func (s *Store) purgeCheckpoint(ctx context.Context) {
	if _, err := s.rdb.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil && ctx.Err() == nil {
		s.logger().Warn("sqlite: purge: the write-ahead log's checkpoint failed; the next commits copy it instead", "err", s.classify(err))
	}
}

// purgeArgs are the parameters of purgeMatch for p.
func purgeArgs(p ledger.PurgeRequest) []any {
	match := []any{nanos(p.ExpiredBy), !p.UpdatedBefore.IsZero(), nanos(p.UpdatedBefore), p.Tenant, p.Tenant}
	if p.ExpiredBy.IsZero() {
		// The zero time would match every record stored with 0.
		match[0] = int64(-1) << 62
	}
	return match
}

var _ ledger.PurgePreviewer = (*Store)(nil)

// PurgePreview implements ledger.PurgePreviewer.
func (s *Store) PurgePreview(ctx context.Context, p ledger.PurgeRequest) (ledger.PurgePreview, error) {
	pv := ledger.PurgePreview{ByState: map[ledger.State]int{}}
	rows, err := s.rdb.QueryContext(ctx, purgePreview, purgeArgs(p)...)
	if err != nil {
		return pv, fmt.Errorf("sqlite: purge preview: %w", err)
	}
	defer func() { _ = rows.Close() }() // a read: rows.Err reports how it ended
	for rows.Next() {
		var (
			state          string
			n              int
			oldest, newest int64
		)
		if err := rows.Scan(&state, &n, &oldest, &newest); err != nil {
			return pv, fmt.Errorf("sqlite: purge preview: %w", err)
		}
		pv.ByState[ledger.State(state)] = n
		if o := fromNanos(oldest); pv.Oldest.IsZero() || o.Before(pv.Oldest) {
			pv.Oldest = o
		}
		if w := fromNanos(newest); w.After(pv.Newest) {
			pv.Newest = w
		}
	}
	if err := rows.Err(); err != nil {
		return pv, fmt.Errorf("sqlite: purge preview: %w", err)
	}
	return pv, nil
}

var _ ledger.TenantEraser = (*Store)(nil)

// EraseTenant's statements: by tenant, through records_list and
// events_period.
const (
	eraseRecords = `DELETE FROM records WHERE tenant = ?`
	eraseEvents  = `DELETE FROM events WHERE tenant = ?`
)

// EraseTenant implements ledger.TenantEraser: one transaction deletes the
// tenant's records and events.
func (s *Store) EraseTenant(ctx context.Context, tenant string) (int, error) {
	if err := ledger.ValidateTenant(tenant); err != nil {
		return 0, err
	}
	var n int
	err := s.write(ctx, func(ctx context.Context, tx execer, _ time.Time) ([]ledger.ID, error) {
		res, err := tx.ExecContext(ctx, eraseRecords, tenant)
		if err != nil {
			return nil, fmt.Errorf("sqlite: erase tenant: %w", err)
		}
		deleted, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("sqlite: erase tenant: %w", err)
		}
		if _, err := tx.ExecContext(ctx, eraseEvents, tenant); err != nil {
			return nil, fmt.Errorf("sqlite: erase tenant events: %w", err)
		}
		n = int(deleted)
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

// bit is b as the 0 or 1 of a statement parameter.
func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

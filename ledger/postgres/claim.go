package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// The claim is decided by the primary key: the INSERT either creates the
// record or does nothing, and returns only that it inserted. The winner, every executed
// operation, pays for one plain statement: every column of the record it
// inserted is a value it sent or a column default, so Claim builds the
// record itself. A follower reads the record it conflicted with in a second
// statement, whose fresh snapshot also sees a record committed by a
// concurrent claimer while the insert waited on it. Only when that record
// may be taken over (RETRYABLE, or settled past its retention) does a third
// round trip try the take-overs, each a guarded UPDATE whose WHERE clause
// PostgreSQL re-checks on the latest row version, so two claimers never
// both take the same record over.
const claimInsert = `INSERT INTO records (tenant, tool, key, session, fingerprint, arguments, state,
		owner, lease_until, trace_id, span_id, reuse_policy, op_token, created_at, updated_at, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15)
	ON CONFLICT (tenant, tool, key) DO NOTHING
	RETURNING true`

const (
	// A settled record past its retention is gone as far as the contract is
	// concerned (the Reexecute policy): the claim replaces it whatever its
	// fingerprint. Tombstones (the Verify policy) are never replaced.
	claimReplaceExpired = `UPDATE records SET session = $4, fingerprint = $5, arguments = $6, state = $7,
		attempts = 0, result = NULL, compacted = false, error_kind = '', error_message = '',
		owner = $8, lease_until = $9, approval = NULL, trace_id = $10, span_id = $11, reuse_policy = $12, tombstone = false,
		op_token = $13, watched = false, created_at = $14, updated_at = $14, expires_at = $15
	WHERE tenant = $1 AND tool = $2 AND key = $3
		AND state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE')
		AND NOT tombstone AND expires_at <= $14
	RETURNING ` + recordCols

	// A RETRYABLE record never reached the tool: the same operation (same
	// fingerprint) is taken over by the next claimer and runs again.
	claimTakeOver = `UPDATE records SET state = 'PROCESSING', owner = $4, lease_until = $5,
		result = NULL, compacted = false, error_kind = '', error_message = '',
		trace_id = $6, span_id = $7, op_token = $8, watched = false, updated_at = $9, expires_at = $10
	WHERE tenant = $1 AND tool = $2 AND key = $3 AND NOT tombstone
		AND state = 'RETRYABLE' AND fingerprint = $11 AND expires_at > $9
	RETURNING ` + recordCols

	claimSelect = `SELECT ` + recordCols + ` FROM records WHERE tenant = $1 AND tool = $2 AND key = $3`
)

// Claim creates the record of req.ID, or takes over a RETRYABLE or expired
// one, and reports whether the caller won. Otherwise the caller is a
// follower and gets the current record; a different fingerprint also
// returns an error wrapping ledger.ErrKeyReused.
//
// When the connection dies after the claim was sent, Claim reads the record
// back and compares the write token it stored: the caller wins exactly when
// its own write committed.
func (s *Store) Claim(ctx context.Context, req ledger.ClaimRequest) (ledger.Claim, error) {
	if err := req.Validate(); err != nil {
		return ledger.Claim{}, err
	}
	if req.ReusePolicy == "" {
		req.ReusePolicy = ledger.Reexecute
	}
	token := newToken()
	var (
		out  ledger.Claim
		sent bool // an earlier attempt may have committed
	)
	err := s.retry(ctx, func() error {
		if sent {
			rec, meta, err := s.get(ctx, req.ID)
			if err == nil && bytes.Equal(meta.token, token) {
				out = ledger.Claim{Record: rec, Won: true}
				return nil
			}
			if err != nil && !errors.Is(err, ledger.ErrNotFound) {
				return err
			}
		}
		var err error
		out, err = s.claimOnce(ctx, req, token)
		var le *lostError
		if errors.As(err, &le) && !le.unsent {
			sent = true
		}
		return err
	})
	if err != nil {
		if errors.Is(err, ledger.ErrKeyReused) {
			return out, err
		}
		if sent {
			return ledger.Claim{}, fmt.Errorf("postgres: claim %s: the connection was lost after the claim was sent, and whether it was recorded could not be read back (a recorded claim expires with its lease): %w", ledger.ShortHash(req.Key), err)
		}
		return ledger.Claim{}, fmt.Errorf("postgres: claim %s: %w", ledger.ShortHash(req.Key), err)
	}
	return out, nil
}

// claimOnce is one attempt at Claim: the insert, then (when the record
// exists) both take-overs and a read in one pipelined round trip.
func (s *Store) claimOnce(ctx context.Context, req ledger.ClaimRequest, token []byte) (ledger.Claim, error) {
	now := s.clock()
	state := ledger.StateProcessing
	var leaseUntil *time.Time
	if req.NeedsApproval {
		state = ledger.StatePendingApproval
	} else {
		l := now.Add(orDefault(req.Lease, ledger.DefaultLease))
		leaseUntil = &l
	}
	expires := now.Add(orDefault(req.Retention, ledger.DefaultRetention))
	args := []any{req.Tenant, req.Tool, req.Key, req.Session, req.Fingerprint, []byte(req.Arguments), string(state),
		req.Owner, leaseUntil, req.TraceID, req.SpanID, string(req.ReusePolicy), token, now, expires}
	takeLease := now.Add(orDefault(req.Lease, ledger.DefaultLease))

	var out ledger.Claim
	// A record can vanish between the statements (a concurrent Purge): the
	// insert is then tried again.
	for range 3 {
		err := s.with(ctx, func(c *pgxpool.Conn) error {
			var won bool
			err := c.QueryRow(ctx, claimInsert, args...).Scan(&won)
			if err == nil {
				out = ledger.Claim{Record: inserted(req, state, leaseUntil, now, expires), Won: true}
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			rec, _, err := scanRecord(c.QueryRow(ctx, claimSelect, req.Tenant, req.Tool, req.Key))
			if err != nil {
				return err
			}
			if !mayTakeOver(rec, req.Fingerprint, now) {
				out = ledger.Claim{Record: rec}
				return nil
			}
			b := &pgx.Batch{}
			b.Queue(claimReplaceExpired, args...)
			b.Queue(claimTakeOver, req.Tenant, req.Tool, req.Key, req.Owner, takeLease,
				req.TraceID, req.SpanID, token, now, expires, req.Fingerprint)
			b.Queue(claimSelect, req.Tenant, req.Tool, req.Key)
			br := c.SendBatch(ctx, b)
			defer br.Close()
			for range 2 {
				rec, _, err := scanRecord(br.QueryRow())
				if err == nil {
					out = ledger.Claim{Record: rec, Won: true}
					return nil
				}
				if !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
			rec, _, err = scanRecord(br.QueryRow())
			if err != nil {
				return err
			}
			out = ledger.Claim{Record: rec}
			return br.Close()
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return ledger.Claim{}, err
		}
		if !out.Won && out.Record.Fingerprint != req.Fingerprint {
			return out, fmt.Errorf("%w: key %s of tool %q is bound to fingerprint %.12s, not %.12s",
				ledger.ErrKeyReused, ledger.ShortHash(req.Key), req.Tool, out.Record.Fingerprint, req.Fingerprint)
		}
		return out, nil
	}
	return ledger.Claim{}, errors.New("postgres: claim: record kept vanishing between insert and read")
}

// mayTakeOver reports whether a claim could take rec over: the guarded
// UPDATEs decide, this only spares followers of a live record the round
// trip.
func mayTakeOver(rec *ledger.Record, fingerprint string, now time.Time) bool {
	if rec.Tombstone {
		return false
	}
	if rec.State.Settled() && !rec.ExpiresAt.After(now) {
		return true
	}
	return rec.State == ledger.StateRetryable && rec.Fingerprint == fingerprint
}

// inserted is the record claimInsert creates for req: what it sent, and the
// columns' defaults for the rest.
func inserted(req ledger.ClaimRequest, state ledger.State, leaseUntil *time.Time, now, expires time.Time) *ledger.Record {
	r := &ledger.Record{
		ID:          req.ID,
		Session:     req.Session,
		Fingerprint: req.Fingerprint,
		Arguments:   bytes.Clone(req.Arguments),
		State:       state,
		Owner:       req.Owner,
		TraceID:     req.TraceID,
		SpanID:      req.SpanID,
		ReusePolicy: req.ReusePolicy,
		CreatedAt:   now,
		UpdatedAt:   now,
		ExpiresAt:   expires,
	}
	if leaseUntil != nil {
		r.LeaseUntil = *leaseUntil
	}
	return r
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

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
// inserted is a value it sent or a column default (fence 1 for a new key),
// so Claim builds the record itself. A follower reads the record it
// conflicted with in a second statement, whose fresh snapshot also sees a
// record committed by a concurrent claimer while the insert waited on it.
// Only when that record may be claimed again (ledger.Claimable: RETRYABLE,
// REJECTED, or settled past its retention) does a third round trip try the
// take-overs, each a guarded UPDATE whose WHERE clause PostgreSQL re-checks
// on the latest row version, so two claimers never both take the same
// record over. Both take-overs and the insert share one parameter list.
const claimInsert = `INSERT INTO records (tenant, layer, tool, key, session, fingerprint, arguments, state,
		owner, lease_until, trace_id, span_id, reuse_policy, op_token, created_at, updated_at, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16)
	ON CONFLICT (tenant, layer, tool, key) DO NOTHING
	RETURNING true`

const (
	// A settled record past its retention is gone as far as the contract is
	// concerned (the Reexecute policy): the claim replaces it whatever its
	// fingerprint. Tombstones (the Verify policy) are never replaced. The
	// fence still grows: an owner of the old operation stays stale.
	claimReplaceExpired = `UPDATE records SET session = $5, fingerprint = $6, arguments = $7, state = $8,
		attempts = 0, fence = fence + 1, result = NULL, compacted = false, error_kind = '', error_message = '',
		owner = $9, lease_until = $10, approval = NULL, trace_id = $11, span_id = $12, reuse_policy = $13, tombstone = false,
		op_token = $14, watched = false, created_at = $15, updated_at = $15, expires_at = $16,
		reconciled = NULL, findings = NULL, finding_count = 0, reconcile_at = '1970-01-01 00:00:00+00'
	WHERE tenant = $1 AND layer = $2 AND tool = $3 AND key = $4
		AND state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED')
		AND NOT tombstone AND expires_at <= $15
	RETURNING ` + recordCols

	// Nothing ran on a RETRYABLE or REJECTED record, so the next claimer
	// takes it over, keeping Attempts and CreatedAt: a RETRYABLE record
	// (the call never reached the tool) for the same operation, which keeps
	// its session, arguments and approval; a REJECTED record for whatever
	// operation claims it now. SET expressions read the row as it was, so
	// the CASEs see the old state. A new run is not reconciled; a RETRYABLE
	// record keeps its findings (a reconciler found it not run), a new
	// operation starts without.
	claimReclaim = `UPDATE records SET state = $8, owner = $9, lease_until = $10, fence = fence + 1,
		result = NULL, compacted = false, error_kind = '', error_message = '',
		reconciled = NULL, reconcile_at = '1970-01-01 00:00:00+00',
		findings = CASE state WHEN 'REJECTED' THEN NULL ELSE findings END,
		finding_count = CASE state WHEN 'REJECTED' THEN 0 ELSE finding_count END,
		session = CASE state WHEN 'REJECTED' THEN $5 ELSE session END,
		fingerprint = CASE state WHEN 'REJECTED' THEN $6 ELSE fingerprint END,
		arguments = CASE state WHEN 'REJECTED' THEN $7 ELSE arguments END,
		reuse_policy = CASE state WHEN 'REJECTED' THEN $13 ELSE reuse_policy END,
		approval = CASE state WHEN 'REJECTED' THEN NULL ELSE approval END,
		trace_id = $11, span_id = $12, op_token = $14, watched = false, updated_at = $15, expires_at = $16
	WHERE tenant = $1 AND layer = $2 AND tool = $3 AND key = $4 AND NOT tombstone AND expires_at > $15
		AND (state = 'REJECTED' OR (state = 'RETRYABLE' AND fingerprint = $6))
	RETURNING ` + recordCols

	claimSelect = `SELECT ` + recordCols + ` FROM records WHERE tenant = $1 AND layer = $2 AND tool = $3 AND key = $4`

	// claimInserts is claimInsert for a batch of claims (batch.go): one
	// statement, its parameters claimInsert's as arrays, one element per
	// claim; it returns the IDs it inserted, each followed by claimInsert's
	// row. The server does about half the work of one statement per claim:
	// much of a single-row insert's cost is the statement's, not the row's.
	claimInserts = `INSERT INTO records (tenant, layer, tool, key, session, fingerprint, arguments, state,
		owner, lease_until, trace_id, span_id, reuse_policy, op_token, created_at, updated_at, expires_at)
	SELECT tenant, layer, tool, key, session, fingerprint, arguments, state,
		owner, lease_until, trace_id, span_id, reuse_policy, op_token, now, now, expires
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::text[],
		$9::text[], $10::timestamptz[], $11::text[], $12::text[], $13::text[], $14::bytea[], $15::timestamptz[], $16::timestamptz[])
		AS u(tenant, layer, tool, key, session, fingerprint, arguments, state,
			owner, lease_until, trace_id, span_id, reuse_policy, op_token, now, expires)
	ON CONFLICT (tenant, layer, tool, key) DO NOTHING
	RETURNING tenant, layer, tool, key, true`
)

// claimRow is what claimInsert writes for one claim.
type claimRow struct {
	tenant, layer, tool, key, session, fingerprint string
	arguments                                      []byte
	state, owner                                   string
	leaseUntil                                     time.Time
	traceID, spanID, policy                        string
	token                                          []byte
	now, expires                                   time.Time
}

// args are claimInsert's parameters, which the take-overs share.
func (r *claimRow) args() []any {
	return []any{r.tenant, r.layer, r.tool, r.key, r.session, r.fingerprint, r.arguments, r.state,
		r.owner, r.leaseUntil, r.traceID, r.spanID, r.policy, r.token, r.now, r.expires}
}

// mergeClaims is the claims batcher's merge: claimInserts for the claims
// of ws.
func mergeClaims(ws []*write) (string, []any, bool) {
	n := len(ws)
	var (
		tenant, layer, tool, key       = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		session, fp                    = make([]string, n), make([]string, n)
		state, owner, trace, span, pol = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		arguments, token               = make([][]byte, n), make([][]byte, n)
		lease, now, expires            = make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
	)
	for i, w := range ws {
		r := w.row.(*claimRow)
		tenant[i], layer[i], tool[i], key[i], session[i], fp[i] = r.tenant, r.layer, r.tool, r.key, r.session, r.fingerprint
		state[i], owner[i], trace[i], span[i], pol[i] = r.state, r.owner, r.traceID, r.spanID, r.policy
		arguments[i], token[i] = r.arguments, r.token
		lease[i], now[i], expires[i] = r.leaseUntil, r.now, r.expires
	}
	return claimInserts, []any{tenant, layer, tool, key, session, fp, arguments, state, owner, lease, trace, span, pol, token, now, expires}, true
}

// Claim creates the record of req.ID, or takes over a RETRYABLE, REJECTED
// or expired one, and reports whether the caller won. Otherwise the caller is a
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

// claimOnce is one attempt at Claim: the insert (batched with concurrent
// claims, see batch.go), then, when the record exists, a read and, when
// the record may be claimed again, both take-overs and a read in one
// pipelined round trip.
func (s *Store) claimOnce(ctx context.Context, req ledger.ClaimRequest, token []byte) (ledger.Claim, error) {
	now := s.clock()
	state := req.State()
	leaseUntil := now.Add(orDefault(req.Lease, ledger.DefaultLease))
	expires := now.Add(orDefault(req.Retention, ledger.DefaultRetention))
	row := &claimRow{tenant: req.Tenant, layer: req.Layer, tool: req.Tool, key: req.Key, session: req.Session, fingerprint: req.Fingerprint,
		arguments: []byte(req.Arguments), state: string(state), owner: req.Owner, leaseUntil: leaseUntil,
		traceID: req.TraceID, spanID: req.SpanID, policy: string(req.ReusePolicy), token: token, now: now, expires: expires}
	args := row.args()

	var out ledger.Claim
	// A record can vanish between the statements (a concurrent Purge): the
	// insert is then tried again.
	for range 3 {
		var won bool
		ins := &write{id: req.ID, query: claimInsert, args: args, row: row,
			scan: func(row pgx.Row) error { return row.Scan(&won) }}
		ins.alone = func() error {
			return s.with(ctx, func(c *pgxpool.Conn) error { return ins.scan(c.QueryRow(ctx, claimInsert, args...)) })
		}
		err := s.claims.do(ctx, ins)
		if err == nil {
			return ledger.Claim{Record: inserted(req, state, leaseUntil, now, expires), Won: true}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return ledger.Claim{}, err
		}
		err = s.with(ctx, func(c *pgxpool.Conn) error {
			rec, _, err := scanRecord(c.QueryRow(ctx, claimSelect, req.Tenant, req.Layer, req.Tool, req.Key))
			if err != nil {
				return err
			}
			if !ledger.Claimable(rec, req.Fingerprint, now) {
				out = ledger.Claim{Record: rec}
				return nil
			}
			b := &pgx.Batch{}
			b.Queue(claimReplaceExpired, args...)
			b.Queue(claimReclaim, args...)
			b.Queue(claimSelect, req.Tenant, req.Layer, req.Tool, req.Key)
			br := c.SendBatch(ctx, b)
			// The batch is one implicit transaction, committed at its end:
			// Close reports whether it committed, so a won claim returns
			// it. On the error paths the error returned says why.
			defer func() { _ = br.Close() }()
			for range 2 {
				rec, _, err := scanRecord(br.QueryRow())
				if err == nil {
					out = ledger.Claim{Record: rec, Won: true}
					return br.Close()
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
		if !out.Won {
			return ledger.Follow("postgres", out.Record, req)
		}
		return out, nil
	}
	return ledger.Claim{}, errors.New("postgres: claim: record kept vanishing between insert and read")
}

// inserted is the record claimInsert creates for req: what it sent, and the
// columns' defaults for the rest.
func inserted(req ledger.ClaimRequest, state ledger.State, leaseUntil, now, expires time.Time) *ledger.Record {
	return &ledger.Record{
		ID:          req.ID,
		Session:     req.Session,
		Fingerprint: req.Fingerprint,
		Arguments:   bytes.Clone(req.Arguments),
		State:       state,
		Fence:       1,
		Owner:       req.Owner,
		LeaseUntil:  leaseUntil,
		TraceID:     req.TraceID,
		SpanID:      req.SpanID,
		ReusePolicy: req.ReusePolicy,
		CreatedAt:   now,
		UpdatedAt:   now,
		ExpiresAt:   expires,
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

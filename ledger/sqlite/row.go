package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// columns is the select list every read and RETURNING clause uses, in the
// order scanRecord expects.
const columns = `tenant, layer, tool, key, session, fingerprint, arguments, state,
	attempts, fence, result, compacted, error_kind, error_message, owner, lease_until,
	approval, trace_id, span_id, reuse_policy, tombstone, created_at,
	updated_at, expires_at, reconciled, findings, finding_count, reconcile_at`

// Settled states as an SQL list; kept in step with ledger.State.Settled by
// TestSettledList.
const settledList = `('SUCCEEDED', 'FAILED', 'RETRYABLE', 'REJECTED', 'DENIED')`

type scanner interface {
	Scan(dest ...any) error
}

func scanRecord(row scanner) (*ledger.Record, error) {
	var (
		r                                  ledger.Record
		args, result                       []byte
		approval                           sql.NullString
		compacted, tombstone               bool
		leaseUntil, created, updated, expi int64
		state, policy                      string
		reconciled, findings               []byte
		reconcileAt                        int64
	)
	err := row.Scan(&r.Tenant, &r.Layer, &r.Tool, &r.Key, &r.Session, &r.Fingerprint, &args,
		&state, &r.Attempts, &r.Fence, &result, &compacted, &r.ErrorKind, &r.ErrorMessage,
		&r.Owner, &leaseUntil, &approval, &r.TraceID, &r.SpanID, &policy,
		&tombstone, &created, &updated, &expi, &reconciled, &findings, &r.FindingCount, &reconcileAt)
	if err != nil {
		return nil, err
	}
	r.State = ledger.State(state)
	r.ReusePolicy = ledger.ReusePolicy(policy)
	r.Compacted = compacted
	r.Tombstone = tombstone
	if args != nil {
		r.Arguments = json.RawMessage(args)
	}
	if result != nil {
		r.Result = json.RawMessage(result)
	}
	if approval.Valid {
		var a ledger.Approval
		if err := json.Unmarshal([]byte(approval.String), &a); err != nil {
			return nil, fmt.Errorf("sqlite: decode approval of %s: %w", r.Tool, err)
		}
		r.Approval = &a
	}
	if r.Reconciled, r.Findings, err = ledger.DecodeFindings(reconciled, findings); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", r.Tool, err)
	}
	r.ReconcileAt = fromNanos(reconcileAt)
	r.LeaseUntil = fromNanos(leaseUntil)
	r.CreatedAt = fromNanos(created)
	r.UpdatedAt = fromNanos(updated)
	r.ExpiresAt = fromNanos(expi)
	return &r, nil
}

// Times are stored as Unix nanoseconds; 0 is the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// blob keeps nil as NULL and an empty value as an empty BLOB.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

// cloneRaw copies b, keeping nil as nil: the caller may reuse its buffer.
func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage{}, b...)
}

func approvalJSON(a *ledger.Approval) (any, error) {
	if a == nil {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode approval: %w", err)
	}
	return string(b), nil
}

package caller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// What a person decides about records, from any process: the CLI
// (agentctl ledger approve, deny, reconcile) and the web console call the
// same two functions.

// Decision is a person's answer to a queued call, given from any process.
type Decision struct {
	// Approve, else deny (a denial needs a Reason).
	Approve bool
	// ForSession also approves later calls of the same tool in the
	// record's session (tenant, session, tool) until Expires, while the
	// policy keeps its version.
	ForSession bool
	// By is who decides (a verified identity: the OS account, the name
	// of a console approver's token); Via is where ("agentctl",
	// "console").
	By     string
	Via    string
	Reason string
	// For is how long a session approval stands (the call's approval
	// expiry when zero).
	For time.Duration
	// DistinctApprover refuses an approval by the requester, as does the
	// policy the call was queued under when it requires another approver
	// (its record says so; the call enforces it again when it runs).
	DistinctApprover bool
	// PolicyVersion is the version of the policy DistinctApprover comes
	// from. A call queued by an older build does not say what its policy
	// requires: when PolicyVersion is set and is not the version the call
	// was queued under, an approval by the requester is refused with
	// ErrOtherPolicy rather than recorded for a call that may refuse it.
	PolicyVersion string
	Now           func() time.Time // time.Now when nil
}

// Decide records d on the queued call id. An approval stays on the record,
// PENDING_APPROVAL until the same expiry, for the next call with the key to
// consume; a denial makes it DENIED, and that call gets the denial.
func Decide(ctx context.Context, st ledger.Store, id ledger.ID, d Decision) (*ledger.Record, error) {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	rec, err := st.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("caller: %w", err)
	}
	q, ok := QueuedCall(rec)
	if !ok {
		return rec, fmt.Errorf("%w: %s key %s is %s", ErrNotQueued, id.Tool, id.Key, rec.State)
	}
	at := now().UTC()
	left := rec.LeaseUntil.Sub(at)
	if left <= 0 {
		return rec, fmt.Errorf("%w: %s key %s: its approval expired at %s", ErrNotQueued, id.Tool, id.Key, rec.LeaseUntil.UTC().Format(time.RFC3339))
	}
	if d.By == "" {
		return rec, errors.New("caller: a decision needs the name of the person who gives it")
	}
	ap := &ledger.Approval{By: d.By, Via: d.Via, At: at, Reason: d.Reason, Fingerprint: rec.Fingerprint,
		PolicyVersion: q.PolicyVersion, Expires: rec.LeaseUntil.UTC(), Requester: q.Requester}
	dec := ledger.Decision{Approval: ap}
	switch {
	case !d.Approve:
		if strings.TrimSpace(d.Reason) == "" {
			return rec, errors.New("caller: a denial needs a reason")
		}
		ap.Decision, dec.On, dec.Reason = ledger.DecisionDenied, ledger.OnDeny, d.Reason
	case d.By == q.Requester && (d.DistinctApprover || q.Distinct):
		return rec, fmt.Errorf("%w (%s)", ErrSameApprover, q.Requester)
	case d.By == q.Requester && !q.DistinctKnown && d.PolicyVersion != "" && d.PolicyVersion != q.PolicyVersion:
		return rec, fmt.Errorf("%w: %s requested %s key %s, queued under policy version %s, and approves under version %s", ErrOtherPolicy, q.Requester, id.Tool, id.Key, q.PolicyVersion, d.PolicyVersion)
	default:
		ap.Decision, dec.On, dec.Owner, dec.Lease = ledger.DecisionApproved, ledger.OnApproveLater, queueOwner(approvedQ(q)), left
		if d.ForSession {
			ap.Decision, ap.Expires = ledger.DecisionApprovedSession, at.Add(cmpOr(d.For, left))
		}
	}
	after, err := ledger.Decide(ctx, st, rec, dec)
	if err != nil {
		return rec, fmt.Errorf("caller: record the decision on %s key %s: %w", id.Tool, id.Key, err)
	}
	return after, nil
}

// approvedQ is q once a person approved it.
func approvedQ(q Queued) Queued {
	q.Approved = true
	return q
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

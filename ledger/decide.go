package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// The transitions that are not a run's own outcome: a re-send of an
// UNKNOWN call, a queued approval consumed, a person's decision and a
// reconciliation. Each is a lifecycle method here, reached by its trigger
// through the table, so that no package outside ledger names a From and a
// To of its own.

// Resend takes the UNKNOWN record rec over to send its call again to a
// key-aware server, which answers a repeat with its first outcome (OnResend):
// the record becomes PROCESSING under this Lifecycle's owner and lease with
// the next fence, so the earlier owner, should it wake up, records nothing.
// Another caller that reconciled or re-sent it first makes it fail with
// ErrStateChanged.
func (lc *Lifecycle) Resend(ctx context.Context, rec *Record) (*Record, error) {
	return lc.move(ctx, rec, OnResend, Transition{Owner: lc.owner(), Lease: lc.lease()})
}

// Resent is what Settle keeps of a call re-sent from UNKNOWN: the
// findings the record had when Resend took it over, and since when it
// was UNKNOWN. An answer to the re-send that a reconciler's verdict could
// have given (SUCCEEDED: found, FAILED: failed) settles the UNKNOWN, and
// the record keeps it as the finding of MethodResend, as it keeps a
// reconciler's; Record.Reconciled says how the UNKNOWN ended.
type Resent struct {
	count    int
	findings []Resolution
	since    time.Time
}

// ResentOf is the Resent of again, the record Resend made of the UNKNOWN
// record unknown.
func ResentOf(unknown, again *Record) *Resent {
	return &Resent{count: again.FindingCount, findings: again.Findings, since: unknown.UpdatedAt}
}

// settles is the finding a re-sent call's transition to to records, or
// nil: none for a state no verdict leads to (the re-send was not sent,
// say). While the record is PROCESSING no finding can join its history
// (Resolve takes UNKNOWN records only), so the count still holds.
func (r *Resent) settles(to State) *FindingWrite {
	if r == nil {
		return nil
	}
	v := RowOf(to).Verdict
	if v == "" || v == VerdictUnknown || v == VerdictNotRun {
		return nil
	}
	entry := Resolution{Verdict: v, Method: MethodResend, By: "re-send",
		Evidence: "the key-aware server answered the call re-sent under its key", Since: r.since}
	return &FindingWrite{Count: r.count, Findings: appendFinding(r.findings, entry), Settles: true}
}

// Consume takes over the queued record rec that a person approved
// (OnApprove, PENDING_APPROVAL -> PROCESSING): this Lifecycle's owner
// replaces the queue's, with the next fence, by compare-and-set on the
// queue's owner and fence, so an approval is used once however many callers
// race for it (the losers get ErrLeaseLost or ErrStateChanged).
func (lc *Lifecycle) Consume(ctx context.Context, rec *Record) (*Record, error) {
	return lc.move(ctx, rec, OnApprove, Transition{Owner: rec.Owner, Fence: rec.Fence, NewOwner: lc.owner(), Lease: lc.lease()})
}

func (lc *Lifecycle) move(ctx context.Context, rec *Record, on Trigger, t Transition) (*Record, error) {
	to, err := Next(rec.State, on)
	if err != nil {
		return nil, err
	}
	t.ID, t.From, t.To = rec.ID, rec.State, to
	return lc.Store.Transition(ctx, t)
}

// Decision is a person's decision on a queued call (PENDING_APPROVAL under a
// queue's lease), recorded from any process.
type Decision struct {
	// On is OnDeny (the record becomes DENIED) or OnApproveLater (it stays
	// PENDING_APPROVAL, approved, under Owner until Lease ends, for the
	// next call with the key to consume).
	On       Trigger
	Approval *Approval
	// Owner names the approved record's new owner (a queue's name, which no
	// process holds); Lease is how long the approval stands.
	Owner string
	Lease time.Duration
	// Reason is kept as the record's error message for a denial.
	Reason string
}

// Decide records d on rec, which must still be in the state, under the
// owner and fence, it was read with (else ErrLeaseLost or ErrStateChanged).
func Decide(ctx context.Context, st Store, rec *Record, d Decision) (*Record, error) {
	if d.On != OnDeny && d.On != OnApproveLater {
		return nil, fmt.Errorf("%w: a decision is %s or %s, not %s", ErrIllegalTransition, OnDeny, OnApproveLater, d.On)
	}
	to, err := Next(rec.State, d.On)
	if err != nil {
		return nil, err
	}
	t := Transition{ID: rec.ID, From: rec.State, To: to, Owner: rec.Owner, Fence: rec.Fence, Approval: d.Approval}
	if d.On == OnDeny {
		t.ErrorKind, t.ErrorMessage = "denied", d.Reason
	} else {
		t.NewOwner, t.Lease = d.Owner, d.Lease
	}
	return st.Transition(ctx, t)
}

// Reconciliation is what someone found out about an UNKNOWN call.
type Reconciliation struct {
	// As is StateSucceeded (found), StateFailed (failed) or StateRetryable
	// (provably not run).
	As State
	// Result is what every later repeat gets back (SUCCEEDED and FAILED).
	Result json.RawMessage
	// Method and By say who or what found it out (MethodPerson when
	// empty); Note is the evidence.
	Method Method
	By     string
	Note   string
	// Kind and Message are kept on the record (KindReconciled and the
	// message Resolve writes when empty).
	Kind    string
	Message string
	// Attempts adds the requests the reconciliation sent (a re-send), if
	// any.
	Attempts int
}

// KindReconciled is the error kind of a reconciled record.
const KindReconciled = "reconciled"

// Reconcile settles the UNKNOWN record id as r says: Resolve with the
// finding r stands for, on the record as it is now. A record that is no
// longer UNKNOWN fails with ErrStateChanged and is left as it is.
func Reconcile(ctx context.Context, st Store, id ID, r Reconciliation) (*Record, error) {
	f := Finding{Result: r.Result, Method: r.Method, By: r.By, Evidence: r.Note, Attempts: r.Attempts}
	switch r.As {
	case StateSucceeded:
		f.Verdict = VerdictFound
	case StateFailed:
		f.Verdict = VerdictFailed
	case StateRetryable:
		f.Verdict = VerdictNotRun
	default:
		return nil, fmt.Errorf("%w: reconcile as %s; want %s, %s or %s", ErrIllegalTransition, r.As, StateSucceeded, StateFailed, StateRetryable)
	}
	if f.Method == "" {
		f.Method = MethodPerson
	}
	rec, err := st.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return resolve(ctx, st, rec, f, r.Kind, r.Message)
}

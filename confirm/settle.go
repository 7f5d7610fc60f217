package confirm

import (
	"context"
	"errors"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Settlement is what Settle recorded for a call that waited for approval.
type Settlement struct {
	// Report is the answer as recorded: OnApprove, OnDeny or OnNoAnswer.
	Report ledger.Report
	// Record is the record after it: PROCESSING on approval, DENIED or
	// REJECTED otherwise.
	Record *ledger.Record
	// NoAnswer is why no one answered (Report.On is OnNoAnswer).
	NoAnswer error
}

// Binding is what an answer given now (at a prompt, by the host's
// elicitation) is bound to, besides the call's fingerprint: the version of
// the policy that asked, and how long "approve for this session" stands.
// A queued call's approval (client.Decide) is bound the same way.
type Binding struct {
	PolicyVersion string
	// SessionFor is how long an approval for the session stands, from
	// when it is given (DefaultApprovalExpiry when zero).
	SessionFor time.Duration
}

// Bound is the policy's binding of an answer about t: its version, and
// its approval expiry for t as the life of a session approval.
func (p *Policy) Bound(t Tool) Binding {
	return Binding{PolicyVersion: p.Version(), SessionFor: p.Expiry(t)}
}

// approval is the ledger's record of ans about rec, given at now, bound.
func (b Binding) approval(ans Answer, rec *ledger.Record, now time.Time) *ledger.Approval {
	ap := ans.Approval(now)
	ap.Fingerprint, ap.PolicyVersion = rec.Fingerprint, b.PolicyVersion
	if ans.Decision == ledger.DecisionApprovedSession {
		life := b.SessionFor
		if life <= 0 {
			life = DefaultApprovalExpiry
		}
		ap.Expires = ap.At.Add(life)
	}
	return ap
}

// Settle records the answer to a call whose PENDING_APPROVAL record
// rec the caller holds (it won the claim): the policy's deny when verdict
// is Deny, else what ask answers, asked while lc renews the lease. The
// approval recorded is bound to rec's fingerprint and to b. No answer (no
// one to ask, a prompt aborted) leaves the record REJECTED: nothing ran,
// and a later call with an answer runs. An ask that returns
// ErrInputRequired (the host asks the person and calls again) is returned
// at once, with the record left waiting under its lease. Every client
// adapter, whatever its SDK, settles approvals through it.
func Settle(ctx context.Context, lc *ledger.Lifecycle, rec *ledger.Record, verdict Verdict, now func() time.Time,
	b Binding, ask func(ctx context.Context) (Answer, error)) (Settlement, error) {
	l := ledger.LeaseOf(rec)
	why := "the policy denies " + rec.Tool
	s := Settlement{Report: ledger.Report{On: ledger.OnDeny, ErrorKind: "denied", ErrorMessage: why,
		Approval: b.approval(Answer{Decision: ledger.DecisionDenied, By: "policy", Reason: why}, rec, now())}}
	if verdict != Deny {
		stop := lc.Hold(ctx, l)
		ans, err := ask(ctx)
		stop()
		switch {
		case errors.Is(err, ErrInputRequired):
			return Settlement{}, err
		case err != nil:
			s.NoAnswer = err
			s.Report = ledger.Report{On: ledger.OnNoAnswer, ErrorKind: ledger.KindNoAnswer, ErrorMessage: ledger.OneLine(err.Error(), 300)}
		case ans.Decision == ledger.DecisionDenied:
			s.Report = ledger.Report{On: ledger.OnDeny, ErrorKind: "denied", ErrorMessage: ans.Reason, Approval: b.approval(ans, rec, now())}
		default:
			s.Report = ledger.Report{On: ledger.OnApprove, Approval: b.approval(ans, rec, now())}
		}
	}
	after, err := lc.Settle(ctx, l, ledger.StatePendingApproval, s.Report)
	if err != nil {
		return Settlement{}, err
	}
	s.Record = after
	return s, nil
}

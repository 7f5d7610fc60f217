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

// Settle records the answer to a call whose PENDING_APPROVAL record rec
// the caller holds (it won the claim): the policy's deny when verdict is
// Deny, else what ask answers, asked while lc renews the lease. No answer
// (no one to ask, a prompt aborted) leaves the record REJECTED: nothing
// ran, and a later call with an answer runs. An ask that returns
// ErrInputRequired (the host asks the person and calls again) is returned
// at once, with the record left waiting under its lease. Every client
// adapter, whatever its SDK, settles approvals through it.
func Settle(ctx context.Context, lc *ledger.Lifecycle, rec *ledger.Record, verdict Verdict, now func() time.Time,
	ask func(ctx context.Context) (Answer, error)) (Settlement, error) {
	l := ledger.LeaseOf(rec)
	why := "the policy denies " + rec.Tool
	s := Settlement{Report: ledger.Report{On: ledger.OnDeny, ErrorKind: "denied", ErrorMessage: why,
		Approval: Answer{Decision: ledger.DecisionDenied, By: "policy", Reason: why}.Approval(now())}}
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
			s.Report = ledger.Report{On: ledger.OnDeny, ErrorKind: "denied", ErrorMessage: ans.Reason, Approval: ans.Approval(now())}
		default:
			s.Report = ledger.Report{On: ledger.OnApprove, Approval: ans.Approval(now())}
		}
	}
	after, err := lc.Settle(ctx, l, ledger.StatePendingApproval, s.Report)
	if err != nil {
		return Settlement{}, err
	}
	s.Record = after
	return s, nil
}

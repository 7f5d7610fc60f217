package caller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
)

// Queued approvals. A call the policy queues is claimed PENDING_APPROVAL
// under a lease that is the approval's expiry, owned by a name that is no
// process (so no one's exit ends it, only the expiry): "queue;VERSION!RULE;WHO"
// while it waits, "approved;VERSION!RULE;WHO" once a person approved it. The
// person's Approval on the record is bound to the key (the record), the
// fingerprint, the policy version the call was queued under and the
// expiry. The next call with the key (or the model's re-planned call) that
// finds it approved takes the record over, PENDING_APPROVAL -> PROCESSING
// with its own owner and fence+1, and runs it: a compare-and-set on the
// queue's owner and fence, so the approval is used once however many
// callers race for it.

var (
	// ErrAwaitingApproval: the call waits for a person's approval. Nothing
	// ran. The error is a *Error carrying the key: a person approves with
	// agentctl ledger approve KEY (or the web console), and the next call
	// with that key runs.
	ErrAwaitingApproval = ledger.ErrAwaitingApproval
	// ErrNotQueued: Decide found no queued call under the key.
	ErrNotQueued = errors.New("caller: no call awaits approval under this key")
	// ErrSameApprover: the policy requires the approver to be someone other
	// than the requester.
	ErrSameApprover = errors.New("caller: the requester may not approve their own call")
	// ErrOtherPolicy: the requester approves their own call under a
	// policy other than the one it was queued under, so whether that
	// policy lets them cannot be told here (Decision.PolicyVersion).
	ErrOtherPolicy = errors.New("caller: the call was queued under another policy, which decides whether its requester may approve it")
)

// Queued is what a queued record's owner says about the call
// (ledger.Queued).
type Queued = ledger.Queued

// QueuedCall reports whether r is a queued call (ledger.QueuedCall).
func QueuedCall(r *ledger.Record) (Queued, bool) { return ledger.QueuedCall(r) }

func queueOwner(q Queued) string { return q.Owner() }

func (c *Caller[P, R]) requester() string {
	if c.opts.Requester != "" {
		return c.opts.Requester
	}
	return "session:" + c.opts.Session
}

// canAsk reports whether a confirmer could be asked now.
func (c *Caller[P, R]) canAsk(ctx context.Context) bool {
	_, ok := confirmerFrom(ctx)
	return ok || c.opts.Confirmer != nil
}

// enqueue claims op for a person to decide later and answers at once.
func (c *Caller[P, R]) enqueue(ctx context.Context, op *operation[P], req ledger.ClaimRequest) (*Outcome[R], error) {
	tool := c.confirmTool(op.name, op.tool)
	req.NeedsApproval = true
	req.Owner = queueOwner(Queued{Requester: c.requester(), PolicyVersion: c.opts.Policy.Version(),
		Distinct: c.opts.Policy.DistinctApprover, DistinctKnown: true})
	req.Lease = c.opts.Policy.Expiry(tool)
	return c.claim(ctx, op, req, func(rec *ledger.Record) (*Outcome[R], error) {
		c.log.Info("call queued for approval", "tool", op.name, "key", ledger.ShortHash(rec.Key), "until", rec.LeaseUntil)
		return nil, c.awaiting(op, rec, "")
	})
}

// unasked reports whether err is a confirmation that found no one to ask
// under a policy that queues such calls instead.
func (c *Caller[P, R]) unasked(err error) bool {
	return c.opts.Policy.QueuesUnasked() && errors.Is(err, ErrRejected) && errors.Is(err, confirm.ErrNoConfirmer)
}

// queued answers a call that found its record queued: still waiting
// (ErrAwaitingApproval), approved (take it over and run it once), or past
// its expiry (end the lease; again reports the key is free to claim). ok is
// false when rec is not a queued call.
func (c *Caller[P, R]) queued(ctx context.Context, op *operation[P], rec *ledger.Record) (o *Outcome[R], again, ok bool, err error) {
	q, ok := QueuedCall(rec)
	if !ok {
		return nil, false, false, nil
	}
	now := c.opts.Now()
	if !rec.LeaseUntil.IsZero() && !now.Before(rec.LeaseUntil) {
		if _, err := c.store.ExpireLeases(ctx); err != nil {
			return nil, false, true, fmt.Errorf("caller: expire the approval of %s: %w", op.name, err)
		}
		latest, err := c.store.Get(ctx, rec.ID)
		if err != nil {
			return nil, false, true, fmt.Errorf("caller: %w", err)
		}
		if ledger.RowOf(latest.State).Waits == ledger.WaitsPerson {
			return nil, false, true, c.awaiting(op, latest, "")
		}
		o, err, again := c.settle(ctx, op, latest)
		return o, again, true, err
	}
	if !q.Approved {
		return nil, false, true, c.awaiting(op, rec, "")
	}
	if why := c.unbound(op, rec, q, now); why != "" {
		return nil, false, true, c.awaiting(op, rec, why)
	}
	after, err := c.lc.Consume(ctx, rec)
	if errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateChanged) {
		// Another caller consumed the approval first (or a person changed
		// the decision): answer from the record as it is now.
		o, err := c.settleID(ctx, op)
		return o, false, true, err
	}
	if err != nil {
		return nil, false, true, fmt.Errorf("caller: take over the approved %s: %w", op.name, err)
	}
	c.log.Info("approved call taken over", "tool", op.name, "key", ledger.ShortHash(rec.Key), "by", rec.Approval.By)
	o, err = c.run(ctx, op, after)
	return o, false, true, err
}

// awaiting is the answer to a call whose record waits for a person:
// ErrAwaitingApproval (with why an approval on it does not count, when
// one is there), and the model-facing text of what to do meanwhile. A
// model told "do not issue it again" would never make the call that runs
// it once approved; told only "try again" it would poll; so the text says
// to tell the user, ask ledger_status later, and call again once approved.
func (c *Caller[P, R]) awaiting(op *operation[P], rec *ledger.Record, why string) error {
	err := ErrAwaitingApproval
	if why != "" {
		err = fmt.Errorf("%w: %s", ErrAwaitingApproval, why)
	}
	e := c.fail(op, rec, err)
	if ce, ok := e.(*Error); ok {
		ce.Text = ledger.AwaitingText(rec, why)
	}
	return e
}

// unbound says why rec's approval does not cover this call ("" when it does).
func (c *Caller[P, R]) unbound(op *operation[P], rec *ledger.Record, q Queued, now time.Time) string {
	ap := rec.Approval
	switch {
	case ap == nil || (ap.Decision != ledger.DecisionApproved && ap.Decision != ledger.DecisionApprovedSession):
		return "the record carries no approval"
	case ap.Fingerprint != rec.Fingerprint || (op.fp != "" && op.fp != rec.Fingerprint):
		return "the approval was given for other arguments"
	case ap.PolicyVersion != q.PolicyVersion || ap.PolicyVersion != c.opts.Policy.Version():
		return fmt.Sprintf("the approval by %s was given under policy version %s and the policy is now %s: approve it again", ap.By, ap.PolicyVersion, c.opts.Policy.Version())
	case !ap.Expires.IsZero() && !now.Before(ap.Expires) && ap.Decision == ledger.DecisionApproved:
		return "the approval expired"
	case c.opts.Policy.DistinctApprover && ap.By == q.Requester:
		return fmt.Sprintf("the policy requires an approver other than the requester %s", q.Requester)
	}
	return ""
}

// standing reports whether r's approval approves later calls of op's tool
// now: "approve for this session", given in this tenant and session, not
// expired, under the policy in force. Every such approval records its
// policy version and expiry when it is given (confirm.Binding, Decide),
// so a changed policy or the passing of time ends it, however it was
// given; one without them (recorded before approvals were bound) stands
// for nothing.
func (c *Caller[P, R]) standing(op *operation[P], r *ledger.Record) bool {
	ap := r.Approval
	switch {
	case ap == nil || ap.Decision != ledger.DecisionApprovedSession:
		return false
	case r.Tenant != op.id.Tenant || r.Session != c.opts.Session || r.Tool != op.name:
		return false
	case ap.PolicyVersion == "" || ap.PolicyVersion != c.opts.Policy.Version():
		return false
	}
	return !ap.Expires.IsZero() && c.opts.Now().Before(ap.Expires)
}

// UpstreamApproval is beside ErrAwaitingApproval when the call waits for a
// person at the server it was sent to (an agentctl proxy that queues it),
// not in this ledger: Key is the call's key in that server's ledger, where
// a person approves it. This ledger's record is RETRYABLE (nothing ran),
// so the same call later sends it again.
type UpstreamApproval struct{ Key string }

func (u *UpstreamApproval) Error() string {
	return "at the server it was sent to, under its key " + u.Key
}

// upstreamAwaits reports the upstream's key when err is a server's
// in_progress answer (-31002) that says the call waits there for a
// person's approval (data.state PENDING_APPROVAL, as agentctl proxy
// answers a keyed host for a queued call); "" otherwise.
func upstreamAwaits(err error) string {
	code, d, ok := retry.Answered(err)
	if !ok || code != ledger.CodeInProgress || ledger.RowOf(ledger.State(d.State)).Waits != ledger.WaitsPerson {
		return ""
	}
	if d.Key == "" {
		return "?"
	}
	return d.Key
}

// awaitingUpstream is the answer to a call the upstream holds for a
// person's approval: ErrAwaitingApproval at once (not a retry budget spent
// polling), with this ledger's record RETRYABLE, since nothing ran, so the
// same call later sends it again and the upstream runs it once approved.
func (c *Caller[P, R]) awaitingUpstream(op *operation[P], rec *ledger.Record, upKey string) error {
	e := c.fail(op, rec, fmt.Errorf("%w %w", ErrAwaitingApproval, &UpstreamApproval{Key: upKey}))
	if ce, ok := e.(*Error); ok {
		ce.Text = fmt.Sprintf("Not done yet: the call of %s (key %s) awaits a person's approval at the server it was sent to, "+
			"where its key is %s. Nothing has run. Tell the user it waits for their approval there "+
			"(agentctl ledger approve %s on that server's ledger, or its web console), and do not look for another way to make it happen. "+
			"Later, make the same call again (same tool and arguments): once approved it runs once; if it was denied or expired, you get that answer.",
			op.name, op.id.Key, upKey, upKey)
	}
	return e
}

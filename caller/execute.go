package caller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

// execute claims op. The winner asks for approval when the policy says so
// and runs the call; a follower settles on the record it found. A record
// that turns out reclaimable (RETRYABLE, REJECTED) is claimed again.
func (c *Caller[P, R]) execute(ctx context.Context, op *operation[P]) (*Outcome[R], error) {
	verdict := c.opts.Policy.Decide(c.confirmTool(op.name, op.tool))
	if verdict == confirm.Ask && !c.canAsk(ctx) && c.opts.Policy.QueuesUnasked() {
		verdict = confirm.Queue
	}
	ask := verdict == confirm.Ask || verdict == confirm.Queue
	var standing *ledger.Record // the record whose standing approval lets this call through
	if ask {
		var err error
		if standing, err = c.sessionApproved(ctx, op); err != nil {
			return nil, err
		}
		ask = standing == nil
	}
	redacted, err := op.redact()
	if err != nil {
		return nil, err
	}
	traceID, spanID := telemetry.IDs(ctx)
	req := ledger.ClaimRequest{
		ID:          op.id,
		Session:     c.opts.Session,
		Fingerprint: op.fp,
		Arguments:   redacted,
		// A call a standing approval lets through is approved on its own
		// record, so the record says which approval ran it.
		NeedsApproval: ask || verdict == confirm.Deny || standing != nil,
		Retention:     c.retention(op.name),
		ReusePolicy:   op.settings.Reuse,
		TraceID:       traceID,
		SpanID:        spanID,
	}
	if ask && verdict == confirm.Queue {
		return c.enqueue(ctx, op, req)
	}
	return c.claim(ctx, op, req, func(rec *ledger.Record) (*Outcome[R], error) {
		asks := ledger.RowOf(rec.State).Waits == ledger.WaitsPerson
		if asks && standing != nil {
			ap := ledger.StandingFrom(standing, rec, c.opts.Now())
			ap.Requester = c.requester()
			after, err := c.lc.Settle(ctx, ledger.LeaseOf(rec), rec.State, ledger.Report{On: ledger.OnApprove, Approval: ap})
			if err != nil {
				return nil, c.fail(op, rec, fmt.Errorf("caller: record the standing approval for %s: %w", op.name, err))
			}
			c.log.Info("call approved by a standing approval", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "by", standing.Approval.By, "given on", ledger.ShortHash(standing.Key))
			return c.run(ctx, op, after)
		}
		if asks {
			var err error
			if rec, err = c.approve(ctx, op, rec, verdict); err != nil {
				if c.unasked(err) {
					// No one could be asked: the REJECTED record is
					// claimed again, for the queue.
					return c.enqueue(ctx, op, req)
				}
				return nil, err
			}
		}
		return c.run(ctx, op, rec)
	})
}

// claim claims req for op through the lifecycle (ledger.Lifecycle.Contend):
// won is handed the record this call holds; a caller that finds another's
// record settles on it (settle), and one that turns out reclaimable is
// claimed again.
func (c *Caller[P, R]) claim(ctx context.Context, op *operation[P], req ledger.ClaimRequest, won func(*ledger.Record) (*Outcome[R], error)) (*Outcome[R], error) {
	var (
		o   *Outcome[R]
		err error
	)
	rec, cerr := c.lc.Contend(ctx, req, func(held *ledger.Record) {
		o, err = won(held)
	}, func(found *ledger.Record) (again bool) {
		o, err, again = c.settle(ctx, op, found)
		return again
	})
	switch {
	case errors.Is(cerr, ledger.ErrKeyReused), errors.Is(cerr, ledger.ErrInProgress):
		return nil, c.fail(op, rec, cerr)
	case cerr != nil:
		return nil, claimFailed(op, cerr)
	}
	return o, err
}

// approve settles a PENDING_APPROVAL record the caller holds: the policy's
// deny, or a person's answer, asked while the lease is kept alive. It
// returns the PROCESSING record on approval. No answer (no one to ask, a
// prompt aborted) leaves the record REJECTED: nothing ran, and a later
// call with an answer runs.
func (c *Caller[P, R]) approve(ctx context.Context, op *operation[P], rec *ledger.Record, verdict confirm.Verdict) (*ledger.Record, error) {
	tool := c.confirmTool(op.name, op.tool)
	st, err := confirm.Settle(ctx, c.lc, rec, verdict, c.opts.Now, c.opts.Policy.Bound(tool), func(ctx context.Context) (confirm.Answer, error) {
		return c.ask(ctx, op, rec)
	})
	if errors.Is(err, confirm.ErrInputRequired) {
		// The host asks the person and calls again with the answer; the
		// record waits, leased, in PENDING_APPROVAL for that round.
		return nil, err
	}
	if err != nil {
		return nil, c.fail(op, rec, fmt.Errorf("caller: record the answer for %s: %w", op.name, err))
	}
	switch st.Report.On {
	case ledger.OnDeny:
		c.log.Info("call denied", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "by", st.Report.Approval.By)
		return nil, c.fail(op, st.Record, ErrDenied)
	case ledger.OnNoAnswer:
		c.log.Info("call not confirmed", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "err", st.NoAnswer)
		return nil, c.fail(op, st.Record, fmt.Errorf("%w: no one confirmed the call: %w", ErrRejected, st.NoAnswer))
	}
	return st.Record, nil
}

// ask puts the call before a person. Earlier attempts of the same call in
// this session are shown so the person can spot a repeat.
func (c *Caller[P, R]) ask(ctx context.Context, op *operation[P], rec *ledger.Record) (confirm.Answer, error) {
	asker := c.opts.Confirmer
	if cf, ok := confirmerFrom(ctx); ok {
		asker = cf
	}
	if asker == nil {
		return confirm.Answer{}, confirm.ErrNoConfirmer
	}
	earlier, err := c.store.FindRecent(ctx, ledger.RecentQuery{
		Tenant: op.id.Tenant, Layer: op.id.Layer, Session: c.opts.Session, Tool: op.name, Fingerprint: op.fp,
		Since: c.opts.Now().Add(-24 * time.Hour),
	})
	if err != nil {
		return confirm.Answer{}, fmt.Errorf("caller: earlier attempts: %w", err)
	}
	args, err := op.redact()
	if err != nil {
		return confirm.Answer{}, err
	}
	mine := earlier[:0]
	for _, r := range earlier {
		if r.Key != rec.Key {
			mine = append(mine, r)
		}
	}
	return asker.Confirm(ctx, confirm.Request{
		Tenant: op.id.Tenant, Session: c.opts.Session, Server: c.serverName(),
		Tool: op.name, Key: op.id.Key, Arguments: args,
		Hints: c.confirmTool(op.name, op.tool).Hints, Earlier: mine,
	})
}

// sessionApproved returns the record on which a person approved this tool
// "for this session" earlier (nil when none stands); the decision lives in
// the ledger so it holds across processes that share the session id.
func (c *Caller[P, R]) sessionApproved(ctx context.Context, op *operation[P]) (*ledger.Record, error) {
	f := ledger.Filter{Tenant: op.id.Tenant, Layer: op.id.Layer, Session: c.opts.Session, Tool: op.name, Limit: ledger.MaxPageSize}
	for {
		page, err := c.store.List(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("caller: session approvals: %w", err)
		}
		for _, r := range page.Records {
			if c.standing(op, r) {
				return r, nil
			}
		}
		if page.Next == "" {
			return nil, nil
		}
		f.Cursor = page.Next
	}
}

func (c *Caller[P, R]) retention(tool string) time.Duration {
	if d := c.opts.Tools.For(tool).Retention; d > 0 {
		return d
	}
	return c.opts.Retention
}

func (c *Caller[P, R]) settleID(ctx context.Context, op *operation[P]) (*Outcome[R], error) {
	rec, err := c.store.Get(ctx, op.id)
	if err != nil {
		return nil, fmt.Errorf("caller: %w", err)
	}
	o, err, again := c.settle(ctx, op, rec)
	if again {
		return c.execute(ctx, op)
	}
	return o, err
}

// claimFailed is the error of a call whose claim the ledger could not
// make: nothing was sent.
func claimFailed[P any](op *operation[P], err error) error {
	return &Error{Tool: op.name, Key: op.id.Key, Err: fmt.Errorf("%w: the ledger could not record the call, so it was not sent: %w", ErrNotSent, err),
		Text: fmt.Sprintf("The call to %s (key %s) was not sent: the ledger could not record it. Nothing ran; the same call may be made again once the ledger works.", op.name, op.id.Key)}
}

package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

// execute claims op and, as the winner, asks for approval when the policy
// says so and runs it; as a follower it settles on the existing record.
func (c *Client) execute(ctx context.Context, op *operation) (*Outcome, error) {
	s := c.Session()
	verdict := c.opts.Policy.Decide(confirm.Tool{Name: op.name, Server: c.serverName(s), Annotations: annotations(op)})
	ask := verdict == confirm.Ask
	if ask {
		ok, err := c.sessionApproved(ctx, op)
		if err != nil {
			return nil, err
		}
		ask = !ok
	}
	redacted, err := op.redact()
	if err != nil {
		return nil, err
	}
	traceID, spanID := telemetry.IDs(ctx)
	cl, err := c.store.Claim(ctx, ledger.ClaimRequest{
		ID:            op.id,
		Session:       c.opts.Session,
		Fingerprint:   op.fp,
		Arguments:     redacted,
		Owner:         c.opts.Owner,
		Lease:         c.opts.Lease,
		NeedsApproval: ask || verdict == confirm.Deny,
		Retention:     c.retention(op.name),
		ReusePolicy:   c.opts.ReusePolicy[op.name],
		TraceID:       traceID,
		SpanID:        spanID,
	})
	if errors.Is(err, ledger.ErrKeyReused) {
		return nil, c.fail(op, cl.Record, err)
	}
	if err != nil {
		return nil, fmt.Errorf("client: claim %s: %w", op.name, err)
	}
	if !cl.Won {
		return c.settle(ctx, op, cl.Record)
	}
	rec := cl.Record
	if rec.State == ledger.StatePendingApproval {
		if rec, err = c.approve(ctx, op, rec, verdict); err != nil {
			if errors.Is(err, errSettledElsewhere) {
				return c.settleID(ctx, op)
			}
			return nil, err
		}
	}
	return c.run(ctx, op, rec)
}

// approve settles a PENDING_APPROVAL record the caller won: the policy's
// deny, or a person's answer. It returns the PROCESSING record on approval.
func (c *Client) approve(ctx context.Context, op *operation, rec *ledger.Record, verdict confirm.Verdict) (*ledger.Record, error) {
	ans := confirm.Answer{Decision: ledger.DecisionDenied, By: "policy", Reason: "the policy denies " + op.name}
	kind := "denied"
	if verdict != confirm.Deny {
		var err error
		ans, err = c.ask(ctx, op, rec)
		if errors.Is(err, confirm.ErrInputRequired) {
			// The host asks the person and calls again with the answer; the
			// record waits in PENDING_APPROVAL for that round.
			return nil, err
		}
		if err != nil {
			ans = confirm.Answer{Decision: ledger.DecisionDenied, By: "mcpledger", Reason: err.Error()}
			kind = KindUnconfirmed
		}
	}
	bg, cancel := c.recordCtx(ctx)
	defer cancel()
	if ans.Decision == ledger.DecisionDenied {
		denied, err := c.store.Transition(bg, ledger.Transition{
			ID: op.id, From: ledger.StatePendingApproval, To: ledger.StateDenied,
			Approval: ans.Approval(c.opts.Now()), ErrorKind: kind, ErrorMessage: ans.Reason,
		})
		if err != nil {
			return nil, fmt.Errorf("client: record denial: %w", err)
		}
		c.log.Info("call denied", "tool", op.name, "key", ledger.ShortHash(op.id.Key), "by", ans.By)
		return nil, c.fail(op, denied, ErrDenied)
	}
	approved, err := c.store.Transition(bg, ledger.Transition{
		ID: op.id, From: ledger.StatePendingApproval, To: ledger.StateProcessing,
		Owner: c.opts.Owner, Lease: c.opts.Lease, Approval: ans.Approval(c.opts.Now()),
	})
	if errors.Is(err, ledger.ErrStateChanged) {
		// Another caller settled the approval first: follow its outcome.
		return nil, errSettledElsewhere
	}
	if err != nil {
		return nil, fmt.Errorf("client: record approval: %w", err)
	}
	return approved, nil
}

// ask puts the call before a person. Earlier attempts of the same call in
// this session are shown so the person can spot a repeat.
func (c *Client) ask(ctx context.Context, op *operation, rec *ledger.Record) (confirm.Answer, error) {
	asker := c.opts.Confirmer
	if cf, ok := confirmerFrom(ctx); ok {
		asker = cf
	}
	if asker == nil {
		return confirm.Answer{}, confirm.ErrNoConfirmer
	}
	earlier, err := c.store.FindRecent(ctx, ledger.RecentQuery{
		Tenant: op.id.Tenant, Session: c.opts.Session, Tool: op.name, Fingerprint: op.fp,
		Since: c.opts.Now().Add(-24 * time.Hour),
	})
	if err != nil {
		return confirm.Answer{}, fmt.Errorf("client: earlier attempts: %w", err)
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
		Tenant: op.id.Tenant, Session: c.opts.Session, Server: c.serverName(c.Session()),
		Tool: op.name, Key: op.id.Key, Arguments: args,
		Annotations: annotations(op), Earlier: mine,
	})
}

// sessionApproved reports whether a person approved this tool "for this
// session" earlier; the decision lives in the ledger so it holds across
// processes that share the session id.
func (c *Client) sessionApproved(ctx context.Context, op *operation) (bool, error) {
	f := ledger.Filter{Tenant: op.id.Tenant, Session: c.opts.Session, Tool: op.name, Limit: ledger.MaxPageSize}
	for {
		page, err := c.store.List(ctx, f)
		if err != nil {
			return false, fmt.Errorf("client: session approvals: %w", err)
		}
		for _, r := range page.Records {
			if r.Approval != nil && r.Approval.Decision == ledger.DecisionApprovedSession {
				return true, nil
			}
		}
		if page.Next == "" {
			return false, nil
		}
		f.Cursor = page.Next
	}
}

func (c *Client) retention(tool string) time.Duration {
	if d, ok := c.opts.RetentionFor[tool]; ok {
		return d
	}
	return c.opts.Retention
}

// recordCtx is for ledger writes that must land even when the caller's ctx
// has ended: the outcome of a call that was sent is never dropped.
func (c *Client) recordCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// KindUnconfirmed marks a denial where no person answered (no terminal, no
// elicitation-capable host, or the input ended). Nobody decided, so the
// re-planning guard does not hold it against a later attempt.
const KindUnconfirmed = "unconfirmed"

var errSettledElsewhere = errors.New("client: approval settled by another caller")

func (c *Client) settleID(ctx context.Context, op *operation) (*Outcome, error) {
	rec, err := c.store.Get(ctx, op.id)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return c.settle(ctx, op, rec)
}

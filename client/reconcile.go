package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
)

// leaseSlack is how long past a lease's end a follower waits for the
// owner's renewal before it treats the owner as gone.
const leaseSlack = 250 * time.Millisecond

// await waits, up to Options.InProgressWait, for a record to leave
// PROCESSING or PENDING_APPROVAL. An owner that stops renewing its lease
// (it crashed, or lost the ledger) would hold followers for good, and no
// one but lease expiry may settle its record: so when the lease has ended
// the follower expires it itself, which makes the record UNKNOWN.
func (c *Client) await(ctx context.Context, rec *ledger.Record) (*ledger.Record, error) {
	wctx, cancel := context.WithTimeout(ctx, c.opts.InProgressWait)
	defer cancel()
	id := rec.ID
	for rec.State.Waiting() {
		bound := time.Duration(-1) // PENDING_APPROVAL waits for a person: no lease
		if rec.State == ledger.StateProcessing {
			bound = rec.LeaseUntil.Sub(c.opts.Now())
			if bound <= 0 {
				if _, err := c.store.ExpireLeases(wctx); err != nil {
					return rec, fmt.Errorf("client: expire leases: %w", err)
				}
				latest, err := c.store.Get(wctx, id)
				if err != nil {
					return rec, fmt.Errorf("client: %w", err)
				}
				rec = latest
				if !rec.State.Waiting() {
					break
				}
				bound = 0 // the store's clock disagrees: look again shortly
			}
			bound += leaseSlack
		}
		lctx, lcancel := wctx, context.CancelFunc(func() {})
		if bound > 0 {
			lctx, lcancel = context.WithTimeout(wctx, bound)
		}
		latest, err := c.store.Wait(lctx, id)
		lcancel()
		if latest != nil {
			rec = latest
		}
		if err == nil {
			continue
		}
		if wctx.Err() != nil {
			return rec, wctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return rec, err
		}
		// The lease deadline passed: look at the owner's lease again.
	}
	return rec, nil
}

// canResend reports whether an UNKNOWN operation may be reconciled by
// sending it again: only to a server that advertises the idempotency
// capability and still remembers the key, which then either replays its
// first execution or runs the call for the first time, never twice.
func (c *Client) canResend(op *operation, rec *ledger.Record) bool {
	if op.args == nil || rec.Tombstone || rec.Fingerprint != op.fp {
		return false
	}
	s := c.Session()
	if !keyAware(s) {
		return false
	}
	if r, ok := serverRetention(s); ok && !c.opts.Now().Before(rec.CreatedAt.Add(r)) {
		return false // the server may have forgotten the key
	}
	return true
}

// resend takes an UNKNOWN record back to PROCESSING under a fresh lease and
// sends the call again with the same key.
func (c *Client) resend(ctx context.Context, op *operation, rec *ledger.Record) (*Outcome, error) {
	op.id = rec.ID
	again, err := c.store.Transition(ctx, ledger.Transition{
		ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateProcessing,
		Owner: c.opts.Owner, Lease: c.opts.Lease,
	})
	if errors.Is(err, ledger.ErrStateChanged) {
		return c.settleID(ctx, op) // another caller reconciled it first
	}
	if err != nil {
		return nil, fmt.Errorf("client: reconcile %s: %w", rec.Tool, err)
	}
	c.log.Info("re-sending an UNKNOWN call to a key-aware server", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key))
	return c.run(ctx, op, again)
}

// serverRetention is how long the server keeps keys, from its capability.
func serverRetention(s *mcp.ClientSession) (time.Duration, bool) {
	ir := s.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return 0, false
	}
	m, ok := ir.Capabilities.Experimental[CapabilityKey].(map[string]any)
	if !ok {
		return 0, false
	}
	secs, ok := m["retentionSeconds"].(float64)
	if !ok || secs <= 0 {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

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
	// A take-over: the store gives the record this owner and the next fence,
	// so the earlier owner, should it wake up, can record nothing.
	again, err := c.store.Transition(ctx, ledger.Transition{
		ID: rec.ID, From: ledger.StateUnknown, To: ledger.StateProcessing,
		Owner: c.lc.Owner, Lease: c.opts.Lease,
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
	m, ok := ir.Capabilities.Experimental[wire.Capability].(map[string]any)
	if !ok {
		return 0, false
	}
	secs, ok := m["retentionSeconds"].(float64)
	if !ok || secs <= 0 {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

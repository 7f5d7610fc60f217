package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/op"
	"github.com/mcpledger/mcpledger/wire"
)

// canResend reports whether an UNKNOWN operation may be reconciled by
// sending it again: only to a server that advertises the idempotency
// capability and still remembers the key, which then either replays its
// first execution or runs the call for the first time, never twice.
func (c *Client) canResend(op *operation, rec *ledger.Record) bool {
	if op.args == nil {
		return false
	}
	v, ok := capability(c.Session())
	return resendable(rec, op.fp, ok, v, c.opts.Now())
}

// resendable is op.Resendable, shared with the mcp-go wrapper.
var resendable = op.Resendable

// resend takes an UNKNOWN record back to PROCESSING under a fresh lease and
// sends the call again with the same key.
func (c *Client) resend(ctx context.Context, op *operation, rec *ledger.Record) (*Outcome, error) {
	op.id = rec.ID
	// A take-over: the store gives the record this owner and the next fence,
	// so the earlier owner, should it wake up, can record nothing.
	again, err := c.lc.Resend(ctx, rec)
	if errors.Is(err, ledger.ErrStateChanged) {
		return c.settleID(ctx, op) // another caller reconciled it first
	}
	if err != nil {
		return nil, fmt.Errorf("client: reconcile %s: %w", rec.Tool, err)
	}
	c.log.Info("re-sending an UNKNOWN call to a key-aware server", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key))
	return c.run(ctx, op, again)
}

// capability is the server's idempotency capability, if it advertises one.
func capability(s *mcp.ClientSession) (any, bool) {
	if s == nil {
		return nil, false
	}
	ir := s.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return nil, false
	}
	v, ok := ir.Capabilities.Experimental[wire.Capability]
	return v, ok
}

package client

import (
	"context"
	"encoding/json"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
)

// ErrNoProbe: the policy names no probe for the record's tool.
var ErrNoProbe = caller.ErrNoProbe

// Reconcile asks the probe the policy names for rec's tool (a read-only
// tool of this server) whether rec, an UNKNOWN record of this client's
// tenant and layer, took effect, and records the finding; see
// caller.Caller.Reconcile. A call that meets an UNKNOWN record of its key
// does this itself; a background sweep calls it for the others.
func (c *Client) Reconcile(ctx context.Context, rec *ledger.Record, args json.RawMessage) (*ledger.Record, error) {
	return c.c.Reconcile(ctx, rec, args)
}

// ErrNoResend: the record's call cannot be re-sent with its key.
var ErrNoResend = caller.ErrNoResend

// Resend settles rec, an UNKNOWN record of this client's tenant and layer,
// by sending its call again with its key to a key-aware server (see
// caller.Caller.Resend): the server answers with its first execution, or
// runs the call for the first time, never twice. ErrNoResend when the
// server does not honour keys or the stored arguments were redacted.
func (c *Client) Resend(ctx context.Context, rec *ledger.Record) (*ledger.Record, error) {
	return c.c.Resend(ctx, rec)
}

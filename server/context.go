package server

import (
	"context"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/wire"
)

// KeyFromContext returns the idempotency key of the guarded call a handler
// is running, so the handler can pass it to its downstream API (an
// end-to-end key: the downstream refuses a second effect even if the ledger
// were lost). It reports false outside a guarded call.
func KeyFromContext(ctx context.Context) (string, bool) { return guard.KeyFromContext(ctx) }

// FenceFromContext returns the fencing token the client sent with the
// guarded call a handler is running (Token 0 when the client sent none), so
// a downstream write can be made conditional on it (outbox.Fence): a store
// that saw a newer token for the key refuses a stale one
// (wire.Fence.Stale). It reports false outside a guarded call.
func FenceFromContext(ctx context.Context) (wire.Fence, bool) { return guard.FenceFromContext(ctx) }

package server

import (
	"context"

	"github.com/mcpledger/mcpledger/wire"
)

type keyCtx struct{}

// lease is what a handler may know of the guarded call it runs.
type lease struct {
	key   string
	fence wire.Fence
}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, keyCtx{}, lease{key: c.id.Key, fence: c.fence})
}

// KeyFromContext returns the idempotency key of the guarded call a handler
// is running, so the handler can pass it to its downstream API (an
// end-to-end key: the downstream refuses a second effect even if the ledger
// were lost). It reports false outside a guarded call.
func KeyFromContext(ctx context.Context) (string, bool) {
	l, ok := ctx.Value(keyCtx{}).(lease)
	return l.key, ok
}

// FenceFromContext returns the fencing token the client sent with the
// guarded call a handler is running (Token 0 when the client sent none), so
// a downstream write can be made conditional on it: a store that saw a
// newer token for the key refuses a stale one (wire.Fence.Stale). It
// reports false outside a guarded call.
func FenceFromContext(ctx context.Context) (wire.Fence, bool) {
	l, ok := ctx.Value(keyCtx{}).(lease)
	return l.fence, ok
}

package server

import "context"

type keyCtx struct{}

// lease is what a handler may know of the guarded call it runs.
type lease struct {
	key   string
	fence int64
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
// guarded call a handler is running (0 when the client sent none), so a
// downstream write can be made conditional on it: a store that saw a
// higher token for the key refuses a lower one. It reports false outside a
// guarded call.
func FenceFromContext(ctx context.Context) (int64, bool) {
	l, ok := ctx.Value(keyCtx{}).(lease)
	return l.fence, ok
}

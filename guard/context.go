package guard

import (
	"context"

	"github.com/mcpledger/mcpledger/wire"
)

type ctxKey struct{}

// lease is what a handler may know of the guarded call it runs.
type lease struct {
	key   string
	fence wire.Fence
}

// WithHandler marks ctx as that of a guarded call with key and fence
// (Token 0: the client sent none). The Guard sets it before the handler
// runs; an adapter needs it only to run a handler outside Guard.Call.
func WithHandler(ctx context.Context, key string, fence wire.Fence) context.Context {
	return context.WithValue(ctx, ctxKey{}, lease{key: key, fence: fence})
}

// KeyFromContext returns the idempotency key of the guarded call a
// handler is running, so the handler can pass it to its downstream API (an
// end-to-end key). It reports false outside a guarded call.
func KeyFromContext(ctx context.Context) (string, bool) {
	l, ok := ctx.Value(ctxKey{}).(lease)
	return l.key, ok
}

// FenceFromContext returns the fencing token the client sent with the
// guarded call a handler is running (Token 0 when it sent none), so a
// downstream write can be made conditional on it (outbox.Fence). It
// reports false outside a guarded call.
func FenceFromContext(ctx context.Context) (wire.Fence, bool) {
	l, ok := ctx.Value(ctxKey{}).(lease)
	return l.fence, ok
}

package server

import "context"

type keyCtx struct{}

func withKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// KeyFromContext returns the idempotency key of the guarded call a handler
// is running, so the handler can pass it to its downstream API (an
// end-to-end key: the downstream refuses a second effect even if the ledger
// were lost). It reports false outside a guarded call.
func KeyFromContext(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyCtx{}).(string)
	return k, ok
}

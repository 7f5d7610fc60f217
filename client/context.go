package client

import (
	"context"

	"github.com/mcpledger/mcpledger/confirm"
)

type ctxKey int

const (
	keyCtx ctxKey = iota
	chainCtx
	newKeyCtx
	confirmerCtx
)

// WithKey sets the idempotency key of the next calls made with ctx. It is
// the strongest identity: the same key is the same operation. The key must
// satisfy ledger.ValidateKey; CallTool rejects it otherwise.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx, key)
}

// WithChain marks the entry of a call chain (a request id, a business
// operation id). Calls made with ctx derive their keys from the chain id,
// the tool and the argument fingerprint, so replaying the chain after a
// crash or a re-plan derives the same keys.
func WithChain(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, chainCtx, id)
}

// WithNewKey asks for a new operation: the next call gets a fresh key and
// skips the re-planning window. Use it when a second identical effect is
// truly wanted.
func WithNewKey(ctx context.Context) context.Context {
	return context.WithValue(ctx, newKeyCtx, true)
}

func keyFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyCtx).(string)
	return k, ok
}

func chainFrom(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(chainCtx).(string)
	return c, ok && c != ""
}

func newKeyFrom(ctx context.Context) bool {
	b, _ := ctx.Value(newKeyCtx).(bool)
	return b
}

// WithConfirmer sets the confirmer for calls made with ctx, in place of
// Options.Confirmer. A proxy uses it to ask the host of each request (an
// MCP elicitation); its answer to a question asked earlier also settles an
// operation left PENDING_APPROVAL by that question.
func WithConfirmer(ctx context.Context, c confirm.Confirmer) context.Context {
	return context.WithValue(ctx, confirmerCtx, c)
}

func confirmerFrom(ctx context.Context) (confirm.Confirmer, bool) {
	c, ok := ctx.Value(confirmerCtx).(confirm.Confirmer)
	return c, ok && c != nil
}

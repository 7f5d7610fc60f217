package caller

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
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
// satisfy ledger.ValidateKey; a call rejects it otherwise.
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

// Key returns the key WithKey put in ctx.
func Key(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyCtx).(string)
	return k, ok
}

// Chain returns the non-empty chain id WithChain put in ctx.
func Chain(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(chainCtx).(string)
	return c, ok && c != ""
}

// WantsNewKey reports whether WithNewKey asked for a new operation.
func WantsNewKey(ctx context.Context) bool {
	b, _ := ctx.Value(newKeyCtx).(bool)
	return b
}

// Choose picks the key of a call of tool with argument fingerprint fp from
// ctx: WithKey's (validated), else one derived from WithChain's chain id,
// else a fresh one when WithNewKey asked for it. It reports false when ctx
// says nothing, and the caller's re-planning guard decides.
func Choose(ctx context.Context, tool, fp string) (key string, ok bool, err error) {
	if key, ok := Key(ctx); ok {
		if err := ledger.ValidateKey(key); err != nil {
			return "", false, err
		}
		return key, true, nil
	}
	if chain, ok := Chain(ctx); ok {
		return ledger.DeriveKey(chain, tool, fp), true, nil
	}
	if WantsNewKey(ctx) {
		return Fresh(), true, nil
	}
	return "", false, nil
}

// Fresh mints a key for an operation that matches nothing earlier.
func Fresh() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("caller: crypto/rand failed: " + err.Error())
	}
	return "r1." + hex.EncodeToString(b)
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

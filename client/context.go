package client

import (
	"context"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/op"
)

type ctxKey int

const confirmerCtx ctxKey = iota

// WithKey sets the idempotency key of the next calls made with ctx
// (op.WithKey: the mcp-go wrapper reads the same key). It is
// the strongest identity: the same key is the same operation. The key must
// satisfy ledger.ValidateKey; CallTool rejects it otherwise.
func WithKey(ctx context.Context, key string) context.Context {
	return op.WithKey(ctx, key)
}

// WithChain marks the entry of a call chain (a request id, a business
// operation id). Calls made with ctx derive their keys from the chain id,
// the tool and the argument fingerprint, so replaying the chain after a
// crash or a re-plan derives the same keys.
func WithChain(ctx context.Context, id string) context.Context {
	return op.WithChain(ctx, id)
}

// WithNewKey asks for a new operation: the next call gets a fresh key and
// skips the re-planning window. Use it when a second identical effect is
// truly wanted.
func WithNewKey(ctx context.Context) context.Context {
	return op.WithNewKey(ctx)
}

// The keys in context are package op's, shared with the mcp-go wrapper.
var (
	keyFrom   = op.Key
	chainFrom = op.Chain
	chooseKey = op.Choose
)

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

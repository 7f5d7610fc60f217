package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
)

// ToolFind is the read-only tool that finds a payment by its idempotency
// key: what a client or proxy in front of an unguarded server asks to
// settle an UNKNOWN create_payment (a probe, DESIGN.md "Reconciliation").
const ToolFind = "find_payment"

// FindIn is the input of find_payment.
type FindIn struct {
	IdempotencyKey string `json:"idempotency_key" jsonschema:"the idempotency key create_payment was sent with"`
}

// addFind registers find_payment. It answers as a probe expects: the
// payment (the result create_payment gave) when one was made under the
// key, an isError result when none was, and a protocol error when it
// cannot tell.
func (a *App) addFind() {
	mcp.AddTool(a.srv, &mcp.Tool{
		Name:        ToolFind,
		Title:       "Find payment by idempotency key",
		Description: "Returns the payment made under idempotency_key; an error result when no payment was made under it.",
		Annotations: &mcp.ToolAnnotations{Title: "Find payment", ReadOnlyHint: true},
	}, a.findTool)
}

// findTool answers find_payment; create_payment's reconciler
// (findPayment) reads the same row.
func (a *App) findTool(ctx context.Context, req *mcp.CallToolRequest, in FindIn) (*mcp.CallToolResult, Payment, error) {
	if err := ledger.ValidateKey(in.IdempotencyKey); err != nil {
		return server.ToolError(fmt.Errorf("payments: idempotency_key: %w; send the key create_payment was sent with", err)), Payment{}, nil
	}
	key := in.IdempotencyKey
	if len(a.cfg.Tokens) > 0 {
		tenant, err := server.TenantFromToken(ctx, req)
		if err != nil {
			return nil, Payment{}, err
		}
		key = PaymentKey(tenant, key)
	}
	p, err := paymentByKey(ctx, a.rdb, key)
	if errors.Is(err, sql.ErrNoRows) {
		return server.ToolError(fmt.Errorf("no payment was made with idempotency key %s", in.IdempotencyKey)), Payment{}, nil
	}
	if err != nil {
		// Not an answer about the payment: a protocol error (a typed
		// handler's other errors become isError results), so a probe
		// reads it as unknown, never as absent.
		return nil, Payment{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("payments: find payment: %v; try again", err)}
	}
	return paymentResult(p), p, nil
}

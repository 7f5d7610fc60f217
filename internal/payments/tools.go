package payments

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/outbox"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool and topic names.
const (
	ToolCreate   = "create_payment"
	ToolGet      = "get_payment"
	TopicCreated = "payment.created"
)

// CreateIn is the input of create_payment.
type CreateIn struct {
	AmountCents int64  `json:"amount_cents" jsonschema:"amount in minor units (cents), at least 1"`
	Currency    string `json:"currency" jsonschema:"ISO 4217 code, e.g. EUR"`
	Payee       string `json:"payee" jsonschema:"who receives the money"`
	Memo        string `json:"memo,omitempty" jsonschema:"optional note for the payee"`
	// The key may also travel as an argument; the guard reads it and
	// keeps it out of the fingerprint.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"idempotency key; reuse it when retrying this payment"`
}

// GetIn is the input of get_payment.
type GetIn struct {
	PaymentID string `json:"payment_id" jsonschema:"the id create_payment returned"`
}

// Payment is a stored payment, and the structured result of both tools.
type Payment struct {
	PaymentID   string `json:"payment_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
	Payee       string `json:"payee"`
	Memo        string `json:"memo,omitempty"`
	CreatedAt   string `json:"created_at"`
}

// Event is the payload of payment.created.
type Event struct {
	PaymentID      string `json:"payment_id"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	AmountCents    int64  `json:"amount_cents"`
	Currency       string `json:"currency"`
	Payee          string `json:"payee"`
}

func (a *App) addTools() {
	mcp.AddTool(a.srv, &mcp.Tool{
		Name:        ToolCreate,
		Title:       "Create payment",
		Description: "Pays amount_cents in currency to payee and returns the payment id. Not idempotent by itself: send an idempotency key.",
		InputSchema: createSchema(),
		// No readOnlyHint and no idempotentHint: this tool moves money.
		Annotations: &mcp.ToolAnnotations{Title: "Create payment"},
	}, a.createPayment)
	mcp.AddTool(a.srv, &mcp.Tool{
		Name:        ToolGet,
		Title:       "Get payment",
		Description: "Returns a payment by id.",
		Annotations: &mcp.ToolAnnotations{Title: "Get payment", ReadOnlyHint: true},
	}, a.getPayment)
	a.addFind()
}

func createSchema() *jsonschema.Schema {
	s, err := jsonschema.For[CreateIn](nil)
	if err != nil {
		panic("payments: create_payment schema: " + err.Error())
	}
	one, most := 1.0, 100_000_000.0
	s.Properties["amount_cents"].Minimum = &one
	s.Properties["amount_cents"].Maximum = &most
	s.Properties["currency"].Pattern = "^[A-Z]{3}$"
	minLen, maxPayee, maxMemo := 1, 200, 500
	s.Properties["payee"].MinLength = &minLen
	s.Properties["payee"].MaxLength = &maxPayee
	s.Properties["memo"].MaxLength = &maxMemo
	return s
}

// ErrLimit: the payment would take the payee over the daily limit.
var ErrLimit = errors.New("payments: daily limit exceeded")

func (a *App) createPayment(ctx context.Context, req *mcp.CallToolRequest, in CreateIn) (*mcp.CallToolResult, Payment, error) {
	// The guard's key doubles as the payment's own unique key (an
	// end-to-end key): even a second execution could not pay twice. It is
	// the tenant's key: two tenants' equal keys are two payments.
	key, _ := server.KeyFromContext(ctx)
	if a.cfg.Unguarded {
		var err error
		if key, err = requestKey(req, in); err != nil {
			return server.ToolError(err), Payment{}, nil
		}
	}
	if key != "" && len(a.cfg.Tokens) > 0 {
		tenant, err := server.TenantFromToken(ctx, req)
		if err != nil {
			return nil, Payment{}, err
		}
		key = PaymentKey(tenant, key)
	}
	p, err := a.insertPayment(ctx, key, in)
	if errors.Is(err, ErrLimit) {
		// The tool ran and said no: a final answer, replayed as such.
		return server.ToolError(err), Payment{}, nil
	}
	if err != nil {
		// The transaction did not commit (SQLite commits atomically or
		// not at all): nothing was paid, and the same key may run again.
		return nil, Payment{}, fmt.Errorf("%w; rolled back, nothing was charged: %w", err, server.ErrNotRun)
	}
	a.disp.Notify()
	if err := a.cfg.Faults.at(ctx, a.cfg.FaultWriter, FaultHandlerCommitted); err != nil {
		return nil, Payment{}, err
	}
	return paymentResult(p), p, nil
}

// requestKey is the key an unguarded server reads itself: the one in
// _meta, else the idempotency_key argument; "" when there is none.
func requestKey(req *mcp.CallToolRequest, in CreateIn) (string, error) {
	key := in.IdempotencyKey
	if v, ok := req.Params.Meta[wire.MetaKey]; ok {
		s, _ := v.(string)
		key = s
	}
	if key == "" {
		return "", nil
	}
	if err := ledger.ValidateKey(key); err != nil {
		return "", fmt.Errorf("payments: the idempotency key breaks the key rules (%w); send 1-255 of [A-Za-z0-9._:~-]", err)
	}
	return key, nil
}

// insertPayment writes the payment and its event in one transaction,
// with the other payments of its batch (see batch.go).
func (a *App) insertPayment(ctx context.Context, key string, in CreateIn) (Payment, error) {
	var p Payment
	err := a.payments.do(ctx, func(hctx context.Context, tx *sql.Tx) error {
		var err error
		p, err = a.writePayment(hctx, tx, key, in)
		return err
	})
	return p, err
}

// writePayment is one payment's part of a batch. Its statements run
// without hctx's cancellation: cancelling a statement can roll back the
// whole transaction, the other payments of the batch with it. hctx is for
// the fault hooks, which wait on the handler.
func (a *App) writePayment(hctx context.Context, tx *sql.Tx, key string, in CreateIn) (Payment, error) {
	ctx := context.WithoutCancel(hctx)
	now := time.Now().UTC()
	p := Payment{
		PaymentID: newPaymentID(), AmountCents: in.AmountCents, Currency: in.Currency,
		Payee: in.Payee, Memo: in.Memo, CreatedAt: now.Format(time.RFC3339Nano),
	}
	var keyArg any
	if key != "" {
		keyArg = key
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO payments (id, idempotency_key, amount_cents, currency, payee, memo, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idempotency_key) DO NOTHING`,
		p.PaymentID, keyArg, p.AmountCents, p.Currency, p.Payee, p.Memo, now.UnixNano())
	if err != nil {
		return Payment{}, fmt.Errorf("payments: insert: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return Payment{}, fmt.Errorf("payments: insert: %w", err)
		}
		// This key already paid: answer with that payment, charge nothing.
		return paymentByKey(ctx, tx, key)
	}
	payload, err := json.Marshal(Event{PaymentID: p.PaymentID, IdempotencyKey: key,
		AmountCents: p.AmountCents, Currency: p.Currency, Payee: p.Payee})
	if err != nil {
		return Payment{}, fmt.Errorf("payments: event: %w", err)
	}
	if _, err := outbox.Enqueue(ctx, tx, TopicCreated, payload); err != nil {
		return Payment{}, err
	}
	// The limit is checked with the new row in place, so concurrent
	// payments to one payee cannot both slip under it.
	var today int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(amount_cents), 0) FROM payments WHERE payee = $1 AND created_at >= $2`,
		p.Payee, now.Add(-24*time.Hour).UnixNano()).Scan(&today); err != nil {
		return Payment{}, fmt.Errorf("payments: limit: %w", err)
	}
	if today > a.cfg.DailyLimitCents {
		return Payment{}, fmt.Errorf("%w: %s would receive %d cents in 24h, above %d; the payment was rolled back and nothing was charged",
			ErrLimit, p.Payee, today, a.cfg.DailyLimitCents)
	}
	if err := a.cfg.Faults.at(hctx, a.cfg.FaultWriter, FaultHandler); err != nil {
		return Payment{}, err
	}
	return p, nil
}

func (a *App) getPayment(ctx context.Context, _ *mcp.CallToolRequest, in GetIn) (*mcp.CallToolResult, Payment, error) {
	p, err := scanPayment(a.rdb.QueryRowContext(ctx, selectPayment+` WHERE id = $1`, in.PaymentID))
	if errors.Is(err, sql.ErrNoRows) {
		return server.ToolError(fmt.Errorf("no payment %q", in.PaymentID)), Payment{}, nil
	}
	if err != nil {
		return nil, Payment{}, err
	}
	return paymentResult(p), p, nil
}

// paymentResult is the text half of both tools' result; the SDK adds the
// structured half from the returned Payment.
func paymentResult(p Payment) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("payment %s: %d.%02d %s to %s", p.PaymentID, p.AmountCents/100, p.AmountCents%100, p.Currency, p.Payee),
	}}}
}

const selectPayment = `SELECT id, amount_cents, currency, payee, memo, created_at FROM payments`

type rowScanner interface{ Scan(...any) error }

func scanPayment(r rowScanner) (Payment, error) {
	var p Payment
	var created int64
	if err := r.Scan(&p.PaymentID, &p.AmountCents, &p.Currency, &p.Payee, &p.Memo, &created); err != nil {
		return Payment{}, err
	}
	p.CreatedAt = time.Unix(0, created).UTC().Format(time.RFC3339Nano)
	return p, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func paymentByKey(ctx context.Context, q queryer, key string) (Payment, error) {
	p, err := scanPayment(q.QueryRowContext(ctx, selectPayment+` WHERE idempotency_key = $1`, key))
	if err != nil {
		return Payment{}, fmt.Errorf("payments: payment of key %s: %w", key, err)
	}
	return p, nil
}

func newPaymentID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("payments: reading random bytes: " + err.Error())
	}
	return "pay_" + hex.EncodeToString(b[:])
}

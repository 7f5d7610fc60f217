package payments_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, cfg payments.Config) *payments.App {
	t.Helper()
	if cfg.DB == "" {
		cfg.DB = filepath.Join(t.TempDir(), "payments.db")
	}
	cfg.Logger = quiet()
	app, err := payments.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { app.Close() })
	return app
}

func connect(t *testing.T, app *payments.App) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := app.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func pay(ctx context.Context, cs *mcp.ClientSession, key string, cents int, payee string) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      payments.ToolCreate,
		Meta:      mcp.Meta{wire.MetaKey: key},
		Arguments: map[string]any{"amount_cents": cents, "currency": "EUR", "payee": payee},
	})
}

func paymentOf(t *testing.T, res *mcp.CallToolResult) payments.Payment {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var p payments.Payment
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return p
}

func count(t *testing.T, app *payments.App, query string, args ...any) int {
	t.Helper()
	var n int
	if err := app.DB().QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestCreateGetAndReplay(t *testing.T) {
	app := open(t, payments.Config{})
	cs := connect(t, app)
	ctx := context.Background()
	first, err := pay(ctx, cs, "order-1", 1250, "alice")
	if err != nil || first.IsError {
		t.Fatalf("create_payment = %v, %v; want a payment", first, err)
	}
	p := paymentOf(t, first)
	if !strings.HasPrefix(p.PaymentID, "pay_") || p.AmountCents != 1250 || p.Payee != "alice" {
		t.Errorf("payment = %+v; want pay_… 1250 EUR to alice", p)
	}
	again, err := pay(ctx, cs, "order-1", 1250, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Meta[wire.MetaReplay]; !ok || paymentOf(t, again).PaymentID != p.PaymentID {
		t.Errorf("duplicate = %+v; want a replay of %s", again, p.PaymentID)
	}
	got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: payments.ToolGet, Arguments: map[string]any{"payment_id": p.PaymentID}})
	if err != nil || paymentOf(t, got) != p {
		t.Errorf("get_payment = %+v, %v; want %+v", got, err, p)
	}
	if n := count(t, app, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("%d payments; want 1", n)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: payments.ToolCreate,
		Arguments: map[string]any{"amount_cents": 1, "currency": "EUR", "payee": "bob"}})
	if err == nil || !strings.Contains(err.Error(), "idempotency key") {
		t.Errorf("create_payment without a key = %v; want a key_required error", err)
	}
}

func TestInvalidArgumentsStoreNothing(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
	}{
		{"zero amount", map[string]any{"amount_cents": 0, "currency": "EUR", "payee": "a"}},
		{"lower-case currency", map[string]any{"amount_cents": 5, "currency": "eur", "payee": "a"}},
		{"missing payee", map[string]any{"amount_cents": 5, "currency": "EUR"}},
		{"amount as text", map[string]any{"amount_cents": "5", "currency": "EUR", "payee": "a"}},
	}
	app := open(t, payments.Config{})
	cs := connect(t, app)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: payments.ToolCreate,
				Meta: mcp.Meta{wire.MetaKey: "bad-" + strings.ReplaceAll(tc.name, " ", "-")}, Arguments: tc.args})
			if err == nil || !strings.Contains(err.Error(), "invalid arguments") {
				t.Errorf("create_payment(%v) = %v; want an invalid arguments error", tc.args, err)
			}
		})
	}
	page, err := app.Ledger().List(context.Background(), ledger.Filter{Tenant: server.DefaultTenant})
	if err != nil || len(page.Records) != 0 {
		t.Errorf("ledger holds %d records (%v); want none", len(page.Records), err)
	}
}

func TestRolledBackPaymentLeavesNoEvent(t *testing.T) {
	app := open(t, payments.Config{DailyLimitCents: 1000})
	cs := connect(t, app)
	ctx := context.Background()
	if res, err := pay(ctx, cs, "limit-1", 600, "bob"); err != nil || res.IsError {
		t.Fatalf("first payment = %v, %v; want success", res, err)
	}
	res, err := pay(ctx, cs, "limit-2", 600, "bob")
	if err != nil || !res.IsError {
		t.Fatalf("payment over the limit = %v, %v; want an isError result", res, err)
	}
	if n := count(t, app, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("%d payments; want 1 (the second rolled back)", n)
	}
	if n := count(t, app, `SELECT count(*) FROM mcpledger_outbox`); n != 1 {
		t.Errorf("%d outbox events; want 1 (the rolled-back payment's event went with it)", n)
	}
	rec, err := app.Ledger().Get(ctx, ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: payments.ToolCreate, Key: "limit-2"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ledger.StateFailed || rec.ErrorKind != server.KindToolError ||
		!strings.Contains(rec.ErrorMessage, "rolled back") || !strings.Contains(rec.ErrorMessage, "daily limit") {
		t.Errorf("record = %s %s %q; want FAILED tool_error saying the payment was rolled back over the daily limit",
			rec.State, rec.ErrorKind, rec.ErrorMessage)
	}
}

func TestEndToEndKeySurvivesLedgerLoss(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "payments.db")
	first := open(t, payments.Config{DB: db, Ledger: filepath.Join(dir, "a.ledger.db")})
	res, err := pay(context.Background(), connect(t, first), "e2e-1", 700, "carol")
	if err != nil || res.IsError {
		t.Fatalf("create_payment = %v, %v", res, err)
	}
	want := paymentOf(t, res).PaymentID
	// A second server with an empty ledger on the same payments table: the
	// guard cannot know the key, but the table's unique key can.
	second := open(t, payments.Config{DB: db, Ledger: filepath.Join(dir, "b.ledger.db")})
	res, err = pay(context.Background(), connect(t, second), "e2e-1", 700, "carol")
	if err != nil || res.IsError {
		t.Fatalf("create_payment on the second server = %v, %v", res, err)
	}
	if got := paymentOf(t, res).PaymentID; got != want {
		t.Errorf("second execution returned %s; want the existing %s", got, want)
	}
	if n := count(t, second, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("%d payments; want 1", n)
	}
	if n := count(t, second, `SELECT count(*) FROM mcpledger_outbox`); n != 1 {
		t.Errorf("%d outbox events; want 1", n)
	}
}

func TestDownstreamAppliesEachPaymentOnce(t *testing.T) {
	app := open(t, payments.Config{})
	cs := connect(t, app)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- app.Run(ctx) }()
	keys := []string{"d-1", "d-2", "d-3"}
	for _, k := range keys {
		for range 2 {
			if _, err := pay(ctx, cs, k, 100, "dave"); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, k := range keys {
		for {
			c, err := app.Downstream().Count(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if c.Applied == 1 && c.Deliveries == 1 {
				break
			}
			if c.Applied > 1 || time.Now().After(deadline) {
				t.Fatalf("downstream counts for %s = %+v; want 1 delivery, applied once", k, c)
			}
			time.Sleep(10 * time.Millisecond) // the dispatcher polls; so does this
		}
	}
	cancel()
	if err := <-runDone; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v; want context.Canceled", err)
	}
}

func TestParseFaults(t *testing.T) {
	tests := []struct {
		in      string
		want    payments.Faults
		wantErr bool
	}{
		{"", payments.Faults{}, false},
		{"handler=hang", payments.Faults{"handler": "hang"}, false},
		{"handler-committed=kill, deliver-applied=sleep:20ms", payments.Faults{"handler-committed": "kill", "deliver-applied": "sleep:20ms"}, false},
		{"nowhere=hang", nil, true},
		{"handler=explode", nil, true},
		{"handler=sleep:soon", nil, true},
		{"handler=stall:4s", payments.Faults{"handler": "stall:4s"}, false},
		{"handler=stall:", nil, true},
		{"handler", nil, true},
		{"reconciler=missing", payments.Faults{"reconciler": "missing"}, false},
		{"handler-committed=sleep:5s,reconciler=lie", payments.Faults{"handler-committed": "sleep:5s", "reconciler": "lie"}, false},
		{"reconciler=hang", nil, true},
		{"handler=lie", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := payments.ParseFaults(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseFaults(%q) error = %v; want error %v", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && len(got) != len(tc.want) {
				t.Fatalf("ParseFaults(%q) = %v; want %v", tc.in, got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("ParseFaults(%q)[%q] = %q; want %q", tc.in, k, got[k], v)
				}
			}
		})
	}
}

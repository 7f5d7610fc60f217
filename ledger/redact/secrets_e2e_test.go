package redact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/server"
)

// syncBuffer is a log sink shared by client and server goroutines.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// confirmFunc is a confirm.Confirmer from a function.
type confirmFunc func(ctx context.Context, req confirm.Request) (confirm.Answer, error)

func (f confirmFunc) Confirm(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
	return f(ctx, req)
}

// TestSecretCorpusNeverStoredOrShown sends every entry of the secret
// corpus, and fields with secret names, through a real client (SQLite
// ledger, confirmation prompt, debug logs) to a real server guard
// (PostgreSQL ledger, debug logs), then reads the SQLite file and its WAL
// byte by byte, the PostgreSQL rows, every log line and every prompt.
func TestSecretCorpusNeverStoredOrShown(t *testing.T) {
	ctx := context.Background()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	pgURL := pgtest.Schema(t)
	sst, err := postgres.Open(ctx, pgURL, nil)
	if err != nil {
		t.Fatalf("postgres.Open = %v", err)
	}
	t.Cleanup(func() { sst.Close() })
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "save_note", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "saved"}}}, nil
		})
	srv.AddReceivingMiddleware(server.New(sst, &server.Options{Logger: logger}).Middleware())
	ct, serverT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "ledger.db")
	cst, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { cst.Close() })
	var (
		mu      sync.Mutex // guards prompts
		prompts []string
	)
	c := client.New(cs, cst, &client.Options{
		Logger: logger,
		Policy: &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Ask}}},
		Confirmer: confirmFunc(func(_ context.Context, req confirm.Request) (confirm.Answer, error) {
			mu.Lock()
			defer mu.Unlock()
			prompts = append(prompts, string(req.Arguments))
			return confirm.Answer{Decision: ledger.DecisionApproved, By: "test"}, nil
		}),
	})
	t.Cleanup(func() { c.Close() })

	const business = "order-4242-for-ann"
	var secrets []string
	calls := 0
	send := func(args map[string]any) {
		t.Helper()
		calls++
		args["ref"] = business
		kctx := client.WithKey(ctx, fmt.Sprintf("note-%d", calls))
		if _, err := c.Call(kctx, &mcp.CallToolParams{Name: "save_note", Arguments: args}); err != nil {
			t.Fatalf("Call(%v) = %v", args, err)
		}
	}
	for _, tc := range secretCorpus {
		send(map[string]any{"note": tc.text, "lines": []any{tc.text}})
		secrets = append(secrets, tc.secrets...)
	}
	named := map[string]any{
		"pass": "hunter2pass", "pwd": "hunter2pwd", "bearer": "hunter2bearer", "auth": "hunter2auth",
		"dsn": "hunter2dsnvalue", "secretKey": "hunter2secretkey", "refresh_token": "hunter2refresh",
		"credentials": map[string]any{"user": "u", "x": "hunter2credential"}, "cookie": "hunter2cookie",
		"db": map[string]any{"userPwd": "hunter2nested"},
	}
	send(named)
	secrets = append(secrets, "hunter2pass", "hunter2pwd", "hunter2bearer", "hunter2auth", "hunter2dsnvalue",
		"hunter2secretkey", "hunter2refresh", "hunter2credential", "hunter2cookie", "hunter2nested")

	// A repeat replays (and logs) without a second prompt.
	if o, err := c.Call(client.WithKey(ctx, "note-1"), &mcp.CallToolParams{Name: "save_note",
		Arguments: map[string]any{"note": secretCorpus[0].text, "lines": []any{secretCorpus[0].text}, "ref": business}}); err != nil || !o.Replayed {
		t.Fatalf("repeat Call = %v; want a replay", err)
	}

	var clientRaw []byte
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		clientRaw = append(clientRaw, b...)
	}
	serverRaw := pgRows(t, pgURL)
	places := map[string]string{
		"the SQLite file and WAL": string(clientRaw),
		"the PostgreSQL rows":     serverRaw,
		"the logs":                logs.String(),
		"the prompts":             strings.Join(prompts, "\n"),
	}
	for _, where := range []string{"the SQLite file and WAL", "the PostgreSQL rows", "the prompts"} {
		// The reading works: the business reference is there, in clear.
		if !strings.Contains(places[where], business) || !strings.Contains(places[where], redact.Placeholder) {
			t.Fatalf("%s hold no %q or %s; the check below would prove nothing", where, business, redact.Placeholder)
		}
	}
	if len(prompts) != calls {
		t.Errorf("%d prompts for %d calls; want one each, none for the replay", len(prompts), calls)
	}
	for where, text := range places {
		for _, s := range secrets {
			js, _ := json.Marshal(s)
			if strings.Contains(text, s) || strings.Contains(text, strings.Trim(string(js), `"`)) {
				t.Errorf("%s hold %q", where, s)
			}
		}
	}
}

// pgRows is every record row: the payload columns as bytes and the whole
// row as PostgreSQL prints it.
func pgRows(t *testing.T, url string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT coalesce(arguments, ''), coalesce(result, ''), r::text FROM records r`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all strings.Builder
	for rows.Next() {
		var args, res []byte
		var row string
		if err := rows.Scan(&args, &res, &row); err != nil {
			t.Fatal(err)
		}
		all.Write(args)
		all.Write(res)
		all.WriteString(row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all.String()
}

package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/telemetry"
)

// TestNoSecretInLogsOrLedgers plants a secret in the arguments and a
// secret-looking key, runs calls down every logged path (execution,
// replay, key conflict, a server-side duplicate, a panic that leaves the
// outcome unknown) with JSON logs at debug level, then searches every log
// line and both ledgers' stored arguments.
func TestNoSecretInLogsOrLedgers(t *testing.T) {
	const (
		secret = "hunter2-planted-secret-value"
		// Valid by the key rules, but shaped like a live API token.
		secretKey = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	)
	r := newRig(t, nil)
	args := func(amount int) *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "pay", Arguments: map[string]any{
			"amount": amount, "payee": "bob", "password": secret,
			"auth": map[string]any{"api_token": secret},
		}}
	}
	ctx := client.WithKey(context.Background(), secretKey)
	if _, err := r.client.Call(ctx, args(5)); err != nil {
		t.Fatalf("first Call = %v", err)
	}
	if o, err := r.client.Call(ctx, args(5)); err != nil || !o.Replayed {
		t.Fatalf("repeat Call = %v; want a replay", err)
	}
	if _, err := r.client.Call(ctx, args(6)); !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("Call with other arguments = %v; want ErrKeyReused", err)
	}
	other := r.newClient(openStore(t, nil), nil)
	if _, err := other.Call(ctx, args(5)); err != nil {
		t.Fatalf("second agent's Call = %v", err)
	}
	r.setHandler(func(context.Context, *mcp.CallToolRequest) error { panic("ledger test panic") })
	panicKey := client.WithKey(context.Background(), secretKey+"-2")
	if _, err := r.client.Call(panicKey, args(7)); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("Call into a panicking handler = %v; want ErrOutcomeUnknown", err)
	}

	logs := r.logs.String()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) < 5 {
		t.Fatalf("only %d log lines; want every call logged at debug level:\n%s", len(lines), logs)
	}
	for i, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line %d is not JSON: %s", i+1, line)
		}
		for _, bad := range []string{secret, secretKey} {
			if strings.Contains(line, bad) {
				t.Errorf("log line %d holds %q: %s", i+1, bad, line)
			}
		}
	}
	if h := ledger.ShortHash(secretKey); !strings.Contains(logs, h) {
		t.Errorf("no log line names the key by its short hash %s", h)
	}

	for _, side := range []struct {
		name  string
		store ledger.Store
	}{{"client", r.cstore}, {"server", r.sstore}} {
		page, err := side.store.List(context.Background(), ledger.Filter{Tenant: tenant, Limit: ledger.MaxPageSize})
		if err != nil {
			t.Fatalf("%s List = %v", side.name, err)
		}
		if len(page.Records) == 0 {
			t.Fatalf("%s ledger has no records", side.name)
		}
		for _, rec := range page.Records {
			if bytes.Contains(rec.Arguments, []byte(secret)) || !bytes.Contains(rec.Arguments, []byte(redact.Placeholder)) {
				t.Errorf("%s record %s stored arguments %s; want the secret redacted", side.name, ledger.ShortHash(rec.Key), rec.Arguments)
			}
			whole, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(whole, []byte(secret)) {
				t.Errorf("%s record %s holds the secret somewhere: %s", side.name, ledger.ShortHash(rec.Key), whole)
			}
		}
	}
}

// A Telemetry shared by many clients logs each call's Debug line with the
// logger of the client that made it (StartLogged); Start keeps
// Options.Logger's.
func TestStartLoggedUsesTheCallersLogger(t *testing.T) {
	var own, callers bytes.Buffer
	debug := &slog.HandlerOptions{Level: slog.LevelDebug}
	tel := telemetry.New(ledger.SideClient, &telemetry.Options{Logger: slog.New(slog.NewJSONHandler(&own, debug))})
	log := slog.New(slog.NewJSONHandler(&callers, debug)).With("session", "s-7")
	ctx := context.Background()
	_, c := tel.StartLogged(ctx, "pay", log)
	c.End(ctx, telemetry.Result{Outcome: ledger.OutcomeSucceeded, Tenant: "default"})
	if got := callers.String(); !strings.Contains(got, `"msg":"mcpledger call"`) || !strings.Contains(got, `"session":"s-7"`) {
		t.Errorf("the caller's log = %q; want its call line with its session", got)
	}
	if own.Len() != 0 {
		t.Errorf("Options.Logger got %q; want nothing from a call started with StartLogged", own.String())
	}
	_, c = tel.Start(ctx, "pay")
	c.End(ctx, telemetry.Result{Outcome: ledger.OutcomeSucceeded, Tenant: "default"})
	if !strings.Contains(own.String(), `"msg":"mcpledger call"`) {
		t.Errorf("Options.Logger got %q; want Start's call line", own.String())
	}
}

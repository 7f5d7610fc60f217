package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
)

// TestStdioServerKilledMidCall runs the server as a real child process that
// exits right after committing the effect, before it answers.
func TestStdioServerKilledMidCall(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idempotent bool
		wantState  ledger.State
	}{
		{"key-aware server: reconnect and retry", true, ledger.StateSucceeded},
		{"plain server: UNKNOWN", false, ledger.StateUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &mcptest.Options{Idempotent: tc.idempotent}
			mcptest.Command(t, opts) // fixes the shared state file
			control := mcptest.New(opts)
			t.Cleanup(func() { control.Close() })
			control.Script(mcptest.ExitAfterCommit())

			var connects int
			connect := func(ctx context.Context) (*mcp.ClientSession, error) {
				connects++
				tr := &mcp.CommandTransport{Command: mcptest.Command(t, opts)}
				return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, tr, nil)
			}
			st := openStore(t)
			c, err := client.Dial(context.Background(), connect, st, &client.Options{Policy: allow(), Retry: fastRetry()})
			if err != nil {
				t.Fatalf("Dial = %v", err)
			}
			t.Cleanup(func() { c.Close() })

			_, err = c.Call(client.WithKey(context.Background(), "crash"), write("a", 1))
			switch {
			case tc.wantState == ledger.StateSucceeded && err != nil:
				t.Fatalf("Call = %v; want success on the restarted server", err)
			case tc.wantState == ledger.StateUnknown && !errors.Is(err, client.ErrOutcomeUnknown):
				t.Fatalf("Call = %v; want ErrOutcomeUnknown", err)
			}
			if tc.idempotent && connects < 2 {
				t.Fatalf("connects = %d; want a reconnect", connects)
			}
			if got := mcptest.New(opts).Executions("crash"); got != 1 {
				t.Fatalf("Executions = %d; want 1", got)
			}
			if r := record(t, st, "write", "crash"); r.State != tc.wantState {
				t.Fatalf("record = %s; want %s", r.State, tc.wantState)
			}
		})
	}
}

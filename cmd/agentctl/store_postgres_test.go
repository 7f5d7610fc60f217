package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

func TestPostgresLedger(t *testing.T) {
	url := pgtest.Schema(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatalf("postgres.Open = %v", err)
	}
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-7"}
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "f", Arguments: json.RawMessage(`{}`), Owner: "w"})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "w", Fence: cl.Record.Fence}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
	st.Close()

	env := map[string]string{"MCPLEDGER_LEDGER": url}
	o := inProcess(t, env, nil, "--json", "ledger", "list")
	o.wantExit(t, exitOK)
	if recs := jsonLines[ledger.Record](t, o.stdout); len(recs) != 1 || recs[0].Key != "order-7" {
		t.Fatalf("ledger list on PostgreSQL = %+v; want order-7", recs)
	}
	inProcess(t, env, nil, "ledger", "reconcile", "order-7", "--as", "succeeded").wantExit(t, exitOK)
	o = inProcess(t, env, nil, "--json", "ledger", "show", "order-7")
	if recs := jsonLines[ledger.Record](t, o.stdout); len(recs) != 1 || recs[0].State != ledger.StateSucceeded {
		t.Fatalf("after reconcile on PostgreSQL: %+v; want SUCCEEDED", recs)
	}
}

// A ledger database that does not answer is exit 5 (try again later), not
// a hang; no PostgreSQL server is needed for this.
func TestPostgresUnreachable(t *testing.T) {
	url := "postgres://u:secret@127.0.0.1:1/ledger?sslmode=disable&connect_timeout=5"
	o := inProcess(t, nil, nil, "--ledger", url, "ledger", "list")
	o.wantExit(t, exitUnreachable, "cannot reach the ledger database", "--ledger")
	if strings.Contains(o.stderr, "secret") {
		t.Errorf("error line shows the password: %q", o.stderr)
	}
}

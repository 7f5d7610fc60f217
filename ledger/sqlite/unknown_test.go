package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func TestCountUnknown(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, nil)
	count := func(want int64) {
		t.Helper()
		if n, err := st.CountUnknown(ctx); err != nil || n != want {
			t.Fatalf("CountUnknown = %d, %v; want %d", n, err, want)
		}
	}
	count(0)
	reach := func(tenant, key string, to ledger.State) ledger.ID {
		t.Helper()
		req := claimReq(key, "owner-1")
		req.ID.Tenant = tenant
		c, err := st.Claim(ctx, req)
		if err != nil || !c.Won {
			t.Fatalf("Claim(%q) = %+v, %v; want a win", key, c, err)
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing, To: to,
			Owner: "owner-1", Fence: c.Record.Fence, Result: []byte(`{"content":[]}`), ErrorKind: "ambiguous"}); err != nil {
			t.Fatalf("Transition(%q to %s) = %v", key, to, err)
		}
		return req.ID
	}
	first := reach("acme", "k1", ledger.StateUnknown)
	reach("globex", "k2", ledger.StateUnknown)
	reach("acme", "k3", ledger.StateSucceeded)
	count(2) // every tenant's
	if _, err := st.Transition(ctx, ledger.Transition{ID: first, From: ledger.StateUnknown, To: ledger.StateSucceeded,
		Result: []byte(`{"content":[]}`)}); err != nil {
		t.Fatalf("reconcile = %v", err)
	}
	count(1)
}

// The count reads the partial index of UNKNOWN records, not the table, so
// asking it at every metrics collection stays cheap on a large ledger.
func TestCountUnknownUsesItsIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`EXPLAIN QUERY PLAN ` + sqlite.CountUnknownQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Either partial index of UNKNOWN records holds them all and nothing
	// else: records_unknown, or records_reconcile_all (0005_reconcile.sql).
	if got := strings.Join(plan, "; "); !strings.Contains(got, "INDEX records_unknown") && !strings.Contains(got, "INDEX records_reconcile_all") {
		t.Errorf("query plan of the UNKNOWN count = %q; want it to use a partial index of UNKNOWN records (records_unknown)", got)
	}
}

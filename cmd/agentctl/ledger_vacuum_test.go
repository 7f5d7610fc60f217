package main

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// After a purge of most of a ledger, vacuum gives the space back: the
// file shrinks. Purge says how fast it went and deletes the events past
// their own retention.
func TestLedgerPurgeThenVacuum(t *testing.T) {
	path, env := ledgerEnv(t)
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	seedRecords(t, st, "k", 3000)
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := st.AppendEvents(context.Background(), []ledger.Event{
		{Tenant: "default", Tool: "t", Side: ledger.SideClient, Outcome: ledger.OutcomeSucceeded, At: old},
		{Tenant: "default", Tool: "t", Side: ledger.SideClient, Outcome: ledger.OutcomeSucceeded, At: time.Now()},
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Settle them all, as if they had run long ago.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE records SET state = 'SUCCEEDED', lease_until = 0, expires_at = 1, arguments = zeroblob(2000)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	o := inProcess(t, env, nil, "ledger", "purge", "--yes")
	o.wantExit(t, exitOK)
	if !strings.Contains(o.stdout, "purged 3000 records in ") || !strings.Contains(o.stdout, "records/s") || !strings.Contains(o.stdout, "purged 1 events older than 7d") {
		t.Errorf("ledger purge = %q; want 3000 records with their rate, and 1 event past 7d", o.stdout)
	}
	before := fileSize(t, path)
	o = inProcess(t, env, nil, "--json", "ledger", "vacuum")
	o.wantExit(t, exitOK)
	got := jsonLines[map[string]int64](t, o.stdout)
	if len(got) != 1 || got[0]["after"] >= got[0]["before"] || got[0]["after"] > before/2 {
		t.Errorf("ledger vacuum = %v (file %d bytes before); want the file at least halved", got, before)
	}
	if after := fileSize(t, path); after >= before {
		t.Errorf("ledger file after vacuum = %d bytes; before %d", after, before)
	}
	inProcess(t, env, nil, "ledger", "purge", "--events-older-than", "soon").wantExit(t, exitUsage, "--events-older-than")
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

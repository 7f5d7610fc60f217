package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A ledger written by the schema before REJECTED, leases on
// PENDING_APPROVAL and fences opens with every record kept at fence 1; the
// next take-over writes fence 2, and a PENDING_APPROVAL record that never
// had a lease is rejected by the first sweep.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	now := ledgertest.Start
	n := now.UnixNano()
	var stmts []string
	for _, name := range []string{"0001_records.sql", "0002_events.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	row := func(key, state string, leaseUntil int64) string {
		return `INSERT INTO records (tenant, tool, key, session, fingerprint, arguments, state, attempts, owner,
			lease_until, created_at, updated_at, expires_at) VALUES ('acme', 'create_payment', '` + key + `', 's1',
			'fp-a', X'7B7D', '` + state + `', 1, 'old-owner', ` + itoa(leaseUntil) + `, ` + itoa(n) + `, ` + itoa(n) + `, ` +
			itoa(now.Add(time.Hour).UnixNano()) + `)`
	}
	stmts = append(stmts,
		row("done", "SUCCEEDED", 0),
		row("retry", "RETRYABLE", 0),
		row("prompt", "PENDING_APPROVAL", 0),
		row("running", "PROCESSING", now.Add(time.Minute).UnixNano()),
		"PRAGMA user_version = 2",
		"PRAGMA application_id = 1296257100", // "MCPL"
	)
	rawExec(t, path, stmts...)

	st, err := sqlite.Open(ctx, path, &sqlite.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("Open(a version 2 ledger) = %v", err)
	}
	defer st.Close()
	// Owners without the server guard's label: the client's layer.
	id := func(key string) ledger.ID {
		return ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: key}
	}
	claimReq := func(key, owner string) ledger.ClaimRequest {
		r := claimReq(key, owner)
		r.Layer = ledger.LayerClient
		return r
	}
	for _, key := range []string{"done", "retry", "prompt", "running"} {
		r, err := st.Get(ctx, id(key))
		if err != nil || r.Fence != 1 || r.Attempts != 1 || r.Owner != "old-owner" || string(r.Arguments) != "{}" {
			t.Fatalf("Get(%q) after migration = %+v, %v; want the record kept, at fence 1", key, r, err)
		}
	}

	c, err := st.Claim(ctx, claimReq("retry", "new-owner"))
	if err != nil || !c.Won || c.Record.Fence != 2 {
		t.Errorf("take-over of a migrated RETRYABLE record = {Won: %v, Fence: %d}, %v; want won at fence 2", c.Won, fenceOf(c), err)
	}
	if n, err := st.ExpireLeases(ctx); err != nil || n != 1 {
		t.Errorf("ExpireLeases() after migration = %d, %v; want 1 (the lease-less PENDING_APPROVAL record)", n, err)
	}
	if r, err := st.Get(ctx, id("prompt")); err != nil || r.State != ledger.StateRejected || r.ErrorKind != ledger.KindApprovalExpired {
		t.Errorf("lease-less PENDING_APPROVAL after the sweep = %v, %v; want REJECTED %q", stateOf(r), err, ledger.KindApprovalExpired)
	}
	other := claimReq("prompt", "new-owner")
	other.Fingerprint = "fp-other"
	if c, err := st.Claim(ctx, other); err != nil || !c.Won || c.Record.Fence != 2 {
		t.Errorf("claim of the rejected record with other arguments = {Won: %v, Fence: %d}, %v; want won at fence 2", c.Won, fenceOf(c), err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: id("running"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "old-owner", Fence: 1}); err != nil {
		t.Errorf("completion of a migrated PROCESSING record under fence 1 = %v; want success", err)
	}
	_, err = st.Transition(ctx, ledger.Transition{ID: id("done"), From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "old-owner", Fence: 1})
	if !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("Transition of a finished migrated record = %v; want ErrLeaseLost", err)
	}

	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var indexes int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'records'
		AND name IN ('records_list', 'records_recent', 'records_lease', 'records_expiry', 'records_updated', 'records_unknown')`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if indexes != 6 {
		t.Errorf("records has %d of its 6 indexes after the rebuild", indexes)
	}
}

// A ledger written before layers opens with each record in the layer its
// owner names: the server guard's owners (server-…, mcpgo-server-…) in
// the server layer, all others in the client layer. The same key can then
// be claimed in another layer, and List shows both.
func TestMigrateToLayers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	now := ledgertest.Start
	n := now.UnixNano()
	var stmts []string
	for _, name := range []string{"0001_records.sql", "0002_events.sql", "0003_lifecycle.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	row := func(key, owner string) string {
		return `INSERT INTO records (tenant, tool, key, session, fingerprint, arguments, state, attempts, owner,
			result, created_at, updated_at, expires_at) VALUES ('acme', 'create_payment', '` + key + `', 's1',
			'fp-a', X'7B7D', 'SUCCEEDED', 1, '` + owner + `', X'7B7D', ` + itoa(n) + `, ` + itoa(n) + `, ` +
			itoa(now.Add(time.Hour).UnixNano()) + `)`
	}
	stmts = append(stmts,
		row("paid-at-server", "server-ab12@host#1.2.x"),
		row("paid-by-mcpgo-server", "mcpgo-server-ab12@host#1.2.x"),
		row("sent-by-client", "client-cd34@host#1.2.x"),
		row("sent-by-hand", "agentctl"),
		"PRAGMA user_version = 3",
		"PRAGMA application_id = 1296257100", // "MCPL"
	)
	rawExec(t, path, stmts...)

	st, err := sqlite.Open(ctx, path, &sqlite.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("Open(a version 3 ledger) = %v", err)
	}
	defer st.Close()
	for key, layer := range map[string]string{
		"paid-at-server": ledger.LayerServer, "paid-by-mcpgo-server": ledger.LayerServer,
		"sent-by-client": ledger.LayerClient, "sent-by-hand": ledger.LayerClient,
	} {
		r, err := st.Get(ctx, ledger.ID{Tenant: "acme", Layer: layer, Tool: "create_payment", Key: key})
		if err != nil || r.State != ledger.StateSucceeded || r.Layer != layer {
			t.Errorf("Get(%q, layer %s) after migration = %v, %v; want the SUCCEEDED record in layer %s", key, layer, stateOf(r), err, layer)
		}
	}
	c := claimReq("sent-by-client", "server-ef56")
	c.Layer = ledger.LayerServer
	if cl, err := st.Claim(ctx, c); err != nil || !cl.Won || cl.Record.Fence != 1 {
		t.Errorf("the server layer's claim of a key the client layer holds = {Won: %v, Fence: %d}, %v; want a new record at fence 1", cl.Won, fenceOf(cl), err)
	}
	p, err := st.List(ctx, ledger.Filter{Tenant: "acme"})
	if err != nil || len(p.Records) != 5 {
		t.Fatalf("List after migration and one claim = %d records, %v; want 5", len(p.Records), err)
	}
	p, err = st.List(ctx, ledger.Filter{Tenant: "acme", Layer: ledger.LayerServer})
	if err != nil || len(p.Records) != 3 {
		t.Errorf("List(layer server) = %d records, %v; want 3", len(p.Records), err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func fenceOf(c ledger.Claim) int64 {
	if c.Record == nil {
		return -1
	}
	return c.Record.Fence
}

func stateOf(r *ledger.Record) ledger.State {
	if r == nil {
		return ""
	}
	return r.State
}

// A ledger of version 4 opens with its UNKNOWN records due for a
// reconciliation at once, none reconciled and no history; a finding on
// one is recorded like on a new record.
func TestMigrateToReconcile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	now := ledgertest.Start
	n := itoa(now.UnixNano())
	var stmts []string
	for _, name := range []string{"0001_records.sql", "0002_events.sql", "0003_lifecycle.sql", "0004_layer.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	stmts = append(stmts,
		`INSERT INTO records (tenant, layer, tool, key, fingerprint, state, attempts, fence, owner, created_at, updated_at, expires_at)
			VALUES ('acme', 'client', 'create_payment', 'lost-1', 'fp', 'UNKNOWN', 1, 3, 'client-1', `+n+`, `+n+`, `+n+` + 3600000000000)`,
		"PRAGMA user_version = 4",
		"PRAGMA application_id = 1296257100", // "MCPL"
	)
	rawExec(t, path, stmts...)
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("Open(a version 4 ledger) = %v", err)
	}
	defer st.Close()
	id := ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "lost-1"}
	r, err := st.Get(ctx, id)
	if err != nil || r.State != ledger.StateUnknown || r.Fence != 3 || r.Reconciled != nil || r.FindingCount != 0 || !r.ReconcileAt.IsZero() {
		t.Fatalf("Get after migration = %+v, %v; want the UNKNOWN record at fence 3, no findings, due at once", r, err)
	}
	due, err := st.DueUnknown(ctx, ledger.DueQuery{Tenant: "acme"})
	if err != nil || len(due) != 1 || due[0].Key != "lost-1" {
		t.Fatalf("DueUnknown after migration = %d records, %v; want lost-1", len(due), err)
	}
	got, err := ledger.Resolve(ctx, st, r, ledger.Finding{Verdict: ledger.VerdictFound, Method: ledger.MethodCallback, By: "bank"})
	if err != nil || got.State != ledger.StateSucceeded || got.Reconciled == nil || got.FindingCount != 1 {
		t.Errorf("Resolve of the migrated record = %+v, %v; want SUCCEEDED, reconciled by the callback", got, err)
	}
}

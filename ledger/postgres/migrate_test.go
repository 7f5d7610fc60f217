package postgres_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// A schema migrated before REJECTED, leases on PENDING_APPROVAL and fences
// opens with every record kept at fence 1; the next take-over writes fence
// 2, and a PENDING_APPROVAL record that never had a lease is rejected by
// the first sweep.
func TestMigrateFromVersion2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	now := ledgertest.Start
	applyMigrations(t, conn, "0001_records.sql", "0002_events.sql")
	insert := func(key, state string, leaseUntil *time.Time) {
		t.Helper()
		if _, err := conn.Exec(ctx, `INSERT INTO records (tenant, tool, key, session, fingerprint, arguments, state, attempts,
			owner, lease_until, created_at, updated_at, expires_at) VALUES ('acme', 'create_payment', $1, 's1', 'fp', '{}', $2, 1,
			'old-owner', $3, $4, $4, $5)`, key, state, leaseUntil, now, now.Add(time.Hour)); err != nil {
			t.Fatalf("insert %s record: %v", state, err)
		}
	}
	running := now.Add(time.Minute)
	insert("done", "SUCCEEDED", nil)
	insert("retry", "RETRYABLE", nil)
	insert("prompt", "PENDING_APPROVAL", nil)
	insert("running", "PROCESSING", &running)

	st := open(t, url, &postgres.Options{Now: func() time.Time { return now }})
	// Owners without the server guard's label: the client's layer (0004).
	id := func(key string) ledger.ID {
		return ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: key}
	}
	for _, key := range []string{"done", "retry", "prompt", "running"} {
		r, err := st.Get(ctx, id(key))
		if err != nil || r.Fence != 1 || r.Attempts != 1 || r.Owner != "old-owner" || string(r.Arguments) != "{}" {
			t.Fatalf("Get(%q) after migration = %+v, %v; want the record kept, at fence 1", key, r, err)
		}
	}
	claim := func(key, fingerprint string) ledger.Claim {
		t.Helper()
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id(key), Fingerprint: fingerprint, Owner: "new-owner"})
		if err != nil || !c.Won || c.Record.Fence != 2 {
			t.Errorf("Claim(%q) of a migrated record = {Won: %v}, %v; want won at fence 2", key, c.Won, err)
		}
		return c
	}
	claim("retry", "fp")
	if n, err := st.ExpireLeases(ctx); err != nil || n != 1 {
		t.Errorf("ExpireLeases() after migration = %d, %v; want 1 (the lease-less PENDING_APPROVAL record)", n, err)
	}
	if r, err := st.Get(ctx, id("prompt")); err != nil || r.State != ledger.StateRejected || r.ErrorKind != ledger.KindApprovalExpired {
		t.Errorf("lease-less PENDING_APPROVAL after the sweep = %+v, %v; want REJECTED %q", r, err, ledger.KindApprovalExpired)
	}
	claim("prompt", "fp-other")
	if _, err := st.Transition(ctx, ledger.Transition{ID: id("running"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: "old-owner", Fence: 1}); err != nil {
		t.Errorf("completion of a migrated PROCESSING record under fence 1 = %v; want success", err)
	}
	_, err = st.Transition(ctx, ledger.Transition{ID: id("done"), From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "old-owner", Fence: 1})
	if !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("Transition of a finished migrated record = %v; want ErrLeaseLost", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE records SET state = 'BOGUS' WHERE key = 'done'`); err == nil {
		t.Errorf("the state check constraint accepted BOGUS after the migration")
	}
}

// applyMigrations builds an older schema on conn: schema_migrations and the
// named migrations, each recorded as applied.
func applyMigrations(t *testing.T, conn *pgx.Conn, names ...string) {
	t.Helper()
	stmts := []string{`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b), `INSERT INTO schema_migrations (version, name) VALUES (`+name[3:4]+`, '`+name+`')`)
	}
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%.60s: %v", s, err)
		}
	}
}

// A schema migrated before layers opens with each record in the layer its
// owner names: the server guard's owners (server-…, mcpgo-server-…) in
// the server layer, all others in the client layer. The old records read
// back under their layer, and the same (tenant, tool, key) can then be
// claimed in another layer as a record of its own.
func TestMigrateToLayers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	applyMigrations(t, conn, "0001_records.sql", "0002_events.sql", "0003_lifecycle.sql")
	now := ledgertest.Start
	insert := func(key, owner, state string) {
		t.Helper()
		if _, err := conn.Exec(ctx, `INSERT INTO records (tenant, tool, key, session, fingerprint, arguments, state, attempts,
			result, owner, created_at, updated_at, expires_at) VALUES ('acme', 'create_payment', $1, 's1', 'fp', '{}', $2, 1,
			'{"ok":true}', $3, $4, $4, $5)`, key, state, owner, now, now.Add(time.Hour)); err != nil {
			t.Fatalf("insert the record of %s: %v", owner, err)
		}
	}
	insert("paid-at-server", "server-ab12@host#1.2.x", "SUCCEEDED")
	insert("paid-by-mcpgo-server", "mcpgo-server-ab12@host#1.2.x", "SUCCEEDED")
	insert("sent-by-client", "client-cd34@host#1.2.x", "SUCCEEDED")
	insert("sent-by-hand", "agentctl", "RETRYABLE")

	st := open(t, url, &postgres.Options{Now: func() time.Time { return now }})
	var version int
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != postgres.SchemaVersion() {
		t.Fatalf("schema version after Open = %d, %v; want %d", version, err, postgres.SchemaVersion())
	}
	want := map[string]string{
		"paid-at-server": ledger.LayerServer, "paid-by-mcpgo-server": ledger.LayerServer,
		"sent-by-client": ledger.LayerClient, "sent-by-hand": ledger.LayerClient,
	}
	for key, layer := range want {
		var got string
		if err := conn.QueryRow(ctx, `SELECT layer FROM records WHERE key = $1`, key).Scan(&got); err != nil || got != layer {
			t.Errorf("layer of %q after migration = %q, %v; want %q", key, got, err, layer)
		}
		id := ledger.ID{Tenant: "acme", Layer: layer, Tool: "create_payment", Key: key}
		r, err := st.Get(ctx, id)
		if err != nil || r.Layer != layer || r.Fence != 1 || r.Attempts != 1 || string(r.Arguments) != "{}" {
			t.Errorf("Get(%q, layer %s) after migration = %+v, %v; want the record kept in layer %s", key, layer, r, err, layer)
		}
		other := id
		other.Layer = ledger.LayerProxy
		if _, err := st.Get(ctx, other); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get(%q, layer proxy) after migration = %v; want ErrNotFound", key, err)
		}
	}

	// The client's key in the server layer: a new record, at fence 1,
	// whatever its fingerprint; the client's record is untouched.
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: "acme", Layer: ledger.LayerServer, Tool: "create_payment", Key: "sent-by-client"},
		Fingerprint: "fp-server", Owner: "server-ef56@host#1.3.x"})
	if err != nil || !c.Won || c.Record.Fence != 1 || c.Record.Layer != ledger.LayerServer {
		t.Fatalf("the server layer's claim of a key the client layer holds = %+v, %v; want a new record won at fence 1", c, err)
	}
	if r, err := st.Get(ctx, ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "sent-by-client"}); err != nil ||
		r.State != ledger.StateSucceeded || r.Owner != "client-cd34@host#1.2.x" {
		t.Errorf("the client's record after the server layer's claim = %+v, %v; want it untouched", r, err)
	}
	// A migrated record keeps its own lifecycle: the RETRYABLE one is
	// taken over in its layer, under the next fence.
	c, err = st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "sent-by-hand"},
		Fingerprint: "fp", Owner: "agentctl"})
	if err != nil || !c.Won || c.Record.Fence != 2 {
		t.Errorf("Claim of the migrated RETRYABLE record = %+v, %v; want a take-over at fence 2", c, err)
	}

	all, err := st.List(ctx, ledger.Filter{Tenant: "acme"})
	if err != nil || len(all.Records) != 5 {
		t.Fatalf("List after migration and one new claim = %d records, %v; want 5", len(all.Records), err)
	}
	server, err := st.List(ctx, ledger.Filter{Tenant: "acme", Layer: ledger.LayerServer})
	if err != nil || len(server.Records) != 3 {
		t.Errorf("List(layer server) = %d records, %v; want 3", len(server.Records), err)
	}
	// The new primary key: a second row of one (tenant, layer, tool, key)
	// is refused, a row of another layer is not.
	dup := `INSERT INTO records (tenant, layer, tool, key, fingerprint, state, created_at, updated_at, expires_at)
		VALUES ('acme', $1, 'create_payment', 'paid-at-server', 'fp', 'SUCCEEDED', $2, $2, $2)`
	if _, err := conn.Exec(ctx, dup, ledger.LayerServer, now); err == nil {
		t.Errorf("a second row of (acme, server, create_payment, paid-at-server) was accepted; want the primary key to refuse it")
	}
	if _, err := conn.Exec(ctx, dup, "", now); err != nil {
		t.Errorf("a row of the empty layer beside the server layer's = %v; want it accepted", err)
	}
}

// A schema of version 4 opens with its UNKNOWN records due for a
// reconciliation at once, none reconciled and no history; a finding on
// one is recorded like on a new record.
func TestMigrateToReconcile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	applyMigrations(t, conn, "0001_records.sql", "0002_events.sql", "0003_lifecycle.sql", "0004_layer.sql")
	now := ledgertest.Start
	if _, err := conn.Exec(ctx, `INSERT INTO records (tenant, layer, tool, key, fingerprint, state, attempts, fence, owner,
		created_at, updated_at, expires_at) VALUES ('acme', 'client', 'create_payment', 'lost-1', 'fp', 'UNKNOWN', 1, 3, 'client-1', $1, $1, $2)`,
		now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	st := open(t, url, &postgres.Options{Now: func() time.Time { return now }})
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

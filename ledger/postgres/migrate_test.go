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
	stmts := []string{`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`}
	for _, name := range []string{"0001_records.sql", "0002_events.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b), `INSERT INTO schema_migrations (version, name) VALUES (`+name[3:4]+`, '`+name+`')`)
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%.60s: %v", s, err)
		}
	}
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
	id := func(key string) ledger.ID { return ledger.ID{Tenant: "acme", Tool: "create_payment", Key: key} }
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

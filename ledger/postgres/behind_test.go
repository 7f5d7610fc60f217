package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// seenSync installs a trigger that notes, for every row the ledger writes,
// the synchronous_commit setting of the writing transaction, and returns a
// reader of what it saw for key, in order.
func seenSync(t *testing.T, url string) func(key string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `
		CREATE TABLE sync_seen (n bigserial, key text, state text, setting text);
		CREATE FUNCTION note_sync() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO sync_seen (key, state, setting) VALUES (NEW.key, NEW.state, current_setting('synchronous_commit'));
			RETURN NEW;
		END $$;
		CREATE TRIGGER note_sync AFTER INSERT OR UPDATE ON records FOR EACH ROW EXECUTE FUNCTION note_sync();`); err != nil {
		t.Fatalf("install trigger: %v", err)
	}
	return func(key string) []string {
		rows, err := conn.Query(ctx, `SELECT state || ':' || setting FROM sync_seen WHERE key = $1 ORDER BY n`, key)
		if err != nil {
			t.Fatal(err)
		}
		seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
}

// Under write-behind only a run's outcome commits with synchronous_commit
// off; the claim is durable, and another session reads the outcome at
// once. The durable default writes nothing behind.
func TestWriteBehind(t *testing.T) {
	cases := []struct {
		name string
		opts *postgres.Options
		ctx  func(context.Context) context.Context
		want []string
	}{
		{"default is durable", nil, nil, []string{"PROCESSING:on", "SUCCEEDED:on"}},
		{"store option", &postgres.Options{Durability: ledger.WriteBehind}, nil, []string{"PROCESSING:on", "SUCCEEDED:off"}},
		{"caller's context", nil, func(ctx context.Context) context.Context { return ledger.WithDurability(ctx, ledger.WriteBehind) },
			[]string{"PROCESSING:on", "SUCCEEDED:off"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.Schema(t)
			st := open(t, url, tc.opts)
			seen := seenSync(t, url)
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx(ctx)
			}
			id := ledger.ID{Tenant: "t", Tool: "pay", Key: "k1"}
			c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "w"})
			if err != nil || !c.Won {
				t.Fatalf("Claim = {Won: %v}, %v", c.Won, err)
			}
			if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded,
				Owner: "w", Fence: c.Record.Fence, Result: benchResult, AddAttempts: 1}); err != nil {
				t.Fatalf("Transition = %v", err)
			}
			// A stale owner's outcome changes nothing, written behind or not.
			if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateFailed,
				Owner: "w", Fence: c.Record.Fence, Result: benchResult}); err == nil {
				t.Fatal("second Transition from PROCESSING = nil error; want a lost compare-and-set")
			}
			other := open(t, url, nil)
			rec, err := other.Get(context.Background(), id)
			if err != nil || rec.State != ledger.StateSucceeded {
				t.Fatalf("other Store Get = %v, %v; want SUCCEEDED", rec, err)
			}
			got := seen("k1")
			if len(got) != len(tc.want) {
				t.Fatalf("writes seen = %v; want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("writes seen = %v; want %v", got, tc.want)
				}
			}
		})
	}
}

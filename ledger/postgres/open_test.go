package postgres_test

import (
	"context"
	"errors"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

func TestOpenRejects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cases := []struct {
		name string
		url  string
		want string // in the error
	}{
		{"not a URL", "ledger.db", "postgres:// or postgresql://"},
		{"other scheme", "mysql://u:p@localhost/db", "postgres:// or postgresql://"},
		{"long schema", "postgres://u@127.0.0.1:1/db?search_path=" + strings.Repeat("s", 60), "longer than 53 bytes"},
		// Nothing listens on port 1; the password must not leak into the error.
		{"unreachable", "postgresql://u:hunter2@127.0.0.1:1/db?connect_timeout=2", "failed to connect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := postgres.Open(ctx, tc.url, nil)
			if err == nil {
				st.Close()
				t.Fatalf("Open(%q) = nil error; want one mentioning %q", tc.url, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%q) = %v; want it to mention %q", tc.url, err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Open(%q) = %v; the error shows the password", tc.url, err)
			}
		})
	}
}

func TestIsURL(t *testing.T) {
	cases := []struct {
		name, in string
		want     bool
	}{
		{"postgres scheme", "postgres://h/db", true},
		{"postgresql scheme", "postgresql://h/db", true},
		{"upper case scheme", "POSTGRES://h/db", true},
		{"file path", "/var/lib/ledger.db", false},
		{"key=value DSN", "host=h dbname=db", false},
		{"one slash", "postgres:/missing", false},
		{"other scheme", "sqlite:///ledger.db", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := postgres.IsURL(tc.in); got != tc.want {
				t.Errorf("IsURL(%q) = %v; want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestSchemaSelection: Options.Schema wins over the URL's search_path,
// which wins over the default.
func TestSchemaSelection(t *testing.T) {
	url := pgtest.Schema(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	st := open(t, url, nil)
	if st.Schema() != schema {
		t.Errorf("Open(url with search_path=%s).Schema() = %q; want %q", schema, st.Schema(), schema)
	}
	other := schema + "_x"
	t.Cleanup(func() { dropSchema(t, url, other) })
	st2 := open(t, url, &postgres.Options{Schema: other})
	if st2.Schema() != other {
		t.Errorf("Open(Options.Schema=%s).Schema() = %q; want %q", other, st2.Schema(), other)
	}
	if got := tableSchemas(t, url, "records"); !contains(got, schema) || !contains(got, other) {
		t.Errorf("records tables live in %v; want %s and %s", got, schema, other)
	}
}

// TestMigrations: a second Open of a migrated schema changes nothing, and
// a schema migrated by a newer build is refused without being touched.
func TestMigrations(t *testing.T) {
	url := pgtest.Schema(t)
	ctx := context.Background()
	open(t, url, nil).Close()
	open(t, url, nil).Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, max int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion() || max != postgres.SchemaVersion() {
		t.Errorf("after two Opens schema_migrations has %d rows up to %d; want %d", n, max, postgres.SchemaVersion())
	}

	future := postgres.SchemaVersion() + 1
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future.sql')`, future); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, url, nil)
	if err == nil {
		st.Close()
	}
	if !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("Open of a schema at version %d = %v; want ErrSchemaTooNew", future, err)
	}
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&max); err != nil || max != future {
		t.Errorf("after the refused Open the schema is at %d (%v); want it untouched at %d", max, err, future)
	}
}

func tableSchemas(t *testing.T, url, table string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_schema FROM information_schema.tables WHERE table_name = $1`, table)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dropSchema(t *testing.T, url, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Error(err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

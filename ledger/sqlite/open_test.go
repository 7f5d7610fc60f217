package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "mcpledger")
	path := filepath.Join(dir, "ledger.db")
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	defer st.Close()
	// A write makes SQLite create its WAL and shared-memory files too.
	if _, err := st.Claim(context.Background(), claimReq("k1", "owner-1")); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	cases := []struct {
		path string
		want os.FileMode
	}{
		{dir, 0o700 | os.ModeDir},
		{filepath.Dir(dir), 0o700 | os.ModeDir},
		{path, 0o600},
		{path + "-wal", 0o600},
		{path + "-shm", 0o600},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			fi, err := os.Stat(tc.path)
			if err != nil {
				t.Fatalf("Stat(%q) = %v", tc.path, err)
			}
			if fi.Mode() != tc.want {
				t.Errorf("mode of %s = %v; want %v", tc.path, fi.Mode(), tc.want)
			}
		})
	}
}

func TestRefusesForeignFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	random := make([]byte, 8192)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	garbage := append([]byte("SQLite format 3\x00"), random[:4080]...)
	cases := []struct {
		name  string
		write func(t *testing.T, path string)
		want  error
	}{
		{"text file", writeBytes([]byte("hello, this is my diary\n")), sqlite.ErrNotDatabase},
		{"random bytes", writeBytes(random), sqlite.ErrNotDatabase},
		{"SQLite header then garbage", writeBytes(garbage), sqlite.ErrNotDatabase},
		{"another application's database", foreignDB, sqlite.ErrNotDatabase},
		{"newer schema", newerSchema, sqlite.ErrSchemaTooNew},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			tc.write(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			st, err := sqlite.Open(context.Background(), path, nil)
			if err == nil {
				st.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open(%s) = %v; want %v", tc.name, err, tc.want)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("Open(%s) modified the file it refused", tc.name)
			}
		})
	}
}

func writeBytes(b []byte) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// foreignDB writes a SQLite database of some other program.
func foreignDB(t *testing.T, path string) {
	rawExec(t, path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users (name) VALUES ('ada')")
}

// newerSchema writes a ledger whose schema version is past this build's.
func newerSchema(t *testing.T, path string) {
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rawExec(t, path, "PRAGMA user_version = 999")
}

// rawExec runs statements on path through database/sql alone.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestReopenKeepsRecordsAndSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	for round := range 3 {
		st, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			t.Fatalf("Open #%d = %v", round, err)
		}
		c, err := st.Claim(ctx, claimReq("k1", "owner-1"))
		if err != nil || c.Won != (round == 0) {
			t.Errorf("Claim after reopen #%d = {Won: %v}, %v; want won only the first time", round, c.Won, err)
		}
		if err := st.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		if _, err := st.Get(ctx, claimReq("k1", "").ID); err == nil {
			t.Errorf("Get after Close = nil error; want an error")
		}
		if _, err := st.Claim(ctx, claimReq("k2", "owner-1")); !errors.Is(err, sqlite.ErrClosed) {
			t.Errorf("Claim after Close = %v; want ErrClosed", err)
		}
	}
	db, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	var mode string
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if version != sqlite.SchemaVersion() || mode != "wal" {
		t.Errorf("database schema version %d journal %q; want %d and wal", version, mode, sqlite.SchemaVersion())
	}
}

// claimReq is a plain claim used by the SQLite-specific tests.
func claimReq(key, owner string) ledger.ClaimRequest {
	return ledger.ClaimRequest{
		ID:          ledger.ID{Tenant: "acme", Tool: "create_payment", Key: key},
		Session:     "s1",
		Fingerprint: "fp-" + "a",
		Arguments:   []byte(`{"amount":42}`),
		Owner:       owner,
	}
}

// Paths reach SQLite as URIs; characters that mean something in a URI
// must still name the file.
func TestOddPaths(t *testing.T) {
	for _, name := range []string{"with space.db", "question?mark.db", "hash#sign.db", "percent%41.db", "ünï.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			st, err := sqlite.Open(context.Background(), path, nil)
			if err != nil {
				t.Fatalf("Open(%q) = %v", path, err)
			}
			if _, err := st.Claim(context.Background(), claimReq("k1", "owner-1")); err != nil {
				t.Errorf("Claim = %v", err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != name {
					t.Errorf("Open(%q) left a file named %q", name, e.Name())
				}
			}
		})
	}
}

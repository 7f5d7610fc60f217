package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// damagedLedgers writes a ledger of n records, closed, then two damaged
// copies of it: cut to half its length, and with garbage over every page
// from the third on (the records' B-tree pages). It returns the paths.
func damagedLedgers(t *testing.T, n int) (truncated, garbage string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	st := openPath(t, path, nil)
	for i := range n {
		if _, err := st.Claim(ctx, claimReq("k"+strings.Repeat("x", 200)+string(rune('a'+i%26))+string(rune('a'+i/26)), "owner-1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8*4096 {
		t.Fatalf("the ledger is %d bytes; the test needs more pages", len(data))
	}
	truncated, garbage = filepath.Join(dir, "truncated.db"), filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(truncated, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), data...)
	for i := 2 * 4096; i < len(bad); i++ {
		bad[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(garbage, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	return truncated, garbage
}

// A damaged ledger is named damaged (ErrDamaged), with what to do, at
// Open or at the first read that meets the damage; a SQLite database of
// another application is still "not an mcpledger database", not damaged.
func TestDamagedLedger(t *testing.T) {
	ctx := context.Background()
	truncated, garbage := damagedLedgers(t, 200)
	for _, tc := range []struct{ name, path string }{{"truncated", truncated}, {"garbage in B-tree pages", garbage}} {
		for _, ro := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: " read-only"}[ro], func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "ledger.db")
				b, err := os.ReadFile(tc.path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
				st, err := sqlite.Open(ctx, path, &sqlite.Options{ReadOnly: ro})
				if err == nil {
					defer st.Close()
					_, err = st.List(ctx, ledger.Filter{Tenant: "acme", Limit: ledger.MaxPageSize})
				}
				if !errors.Is(err, sqlite.ErrDamaged) || !strings.Contains(err.Error(), "is damaged") || !strings.Contains(err.Error(), "restore it from a backup") || strings.Contains(err.Error(), "not an mcpledger database") {
					t.Fatalf("Open and List of a %s ledger = %v; want ErrDamaged saying it is damaged and to restore it from a backup", tc.name, err)
				}
			})
		}
	}
	t.Run("another application's database", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "other.db")
		foreignDB(t, path)
		_, err := sqlite.Open(ctx, path, nil)
		if !errors.Is(err, sqlite.ErrNotDatabase) || errors.Is(err, sqlite.ErrDamaged) || !strings.Contains(err.Error(), "not an mcpledger database") {
			t.Fatalf("Open of another application's database = %v; want ErrNotDatabase, not ErrDamaged", err)
		}
	})
}

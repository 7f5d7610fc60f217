package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/rofs"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A ledger in a folder no one may write (a read-only mount, a snapshot)
// has no room for the -shm file SQLite's WAL mode reads through. A
// read-only Open serves it whenever what it reads is the whole ledger, and
// otherwise says why not and what to do.
func TestReadOnlyFolder(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	path := filepath.Join(src, "ledger.db")
	// k0 reaches the ledger file (Close checkpoints); k1 stays in the
	// -wal file of the live copy below.
	st := openPath(t, path, nil)
	if _, err := st.Claim(ctx, claimReq("k0", "owner-1")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	closed := readFiles(t, path, "")
	live := openPath(t, path, nil)
	if _, err := live.Claim(ctx, claimReq("k1", "owner-1")); err != nil {
		t.Fatal(err)
	}
	open := readFiles(t, path, "", "-wal", "-shm")
	if len(open["-wal"]) == 0 {
		t.Fatal("the live ledger has an empty -wal file; the test needs k1 in it")
	}

	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  []string // the keys listed; nil: Open fails with ErrWALUnreadable
	}{
		{"closed ledger alone", closed, []string{"k0"}},
		{"closed ledger with an empty -wal", map[string][]byte{"": closed[""], "-wal": nil}, []string{"k0"}},
		{"live copy with -wal and -shm", open, []string{"k0", "k1"}},
		{"live copy with -wal, without -shm", map[string][]byte{"": open[""], "-wal": open["-wal"]}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "live copy with -wal and -shm" && sqlite.Driver != sqlite.DriverCgo {
				// The pure-Go VFS reads a -wal only through a -shm file it
				// can write: it says so.
				tc.want = nil
			}
			dir := t.TempDir()
			ro := filepath.Join(dir, "ledger.db")
			for suffix, b := range tc.files {
				if err := os.WriteFile(ro+suffix, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("the folder is made read-only with %s", rofs.Dir(t, dir))
			st, err := sqlite.Open(ctx, ro, &sqlite.Options{ReadOnly: true})
			if tc.want == nil {
				if err == nil {
					st.Close()
				}
				if !errors.Is(err, sqlite.ErrWALUnreadable) || !strings.Contains(err.Error(), ro+"-wal") || !strings.Contains(err.Error(), "copy") {
					t.Fatalf("Open(ReadOnly) = %v; want ErrWALUnreadable naming %s-wal and a copy to make", err, ro)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(ReadOnly) in a read-only folder = %v; want the ledger served", err)
			}
			defer st.Close()
			page, err := st.List(ctx, ledger.Filter{Tenant: "acme", Limit: 10})
			if err != nil {
				t.Fatalf("List = %v", err)
			}
			var keys []string
			for _, r := range page.Records {
				keys = append(keys, r.Key)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.want) {
				t.Errorf("List = %v; want %v", keys, tc.want)
			}
			if rec, err := st.Get(ctx, ledger.ID{Tenant: "acme", Tool: "create_payment", Key: tc.want[len(tc.want)-1]}); err != nil || rec.State != ledger.StateProcessing {
				t.Errorf("Get(%s) = %v, %v; want the PROCESSING record", tc.want[len(tc.want)-1], rec, err)
			}
			if _, err := st.Claim(ctx, claimReq("k2", "owner-2")); !errors.Is(err, sqlite.ErrReadOnly) {
				t.Errorf("Claim on the read-only ledger = %v; want ErrReadOnly", err)
			}
		})
	}
}

// readFiles reads path followed by each suffix ("" is the ledger itself).
func readFiles(t *testing.T, path string, suffixes ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, s := range suffixes {
		b, err := os.ReadFile(path + s)
		if err != nil {
			t.Fatal(err)
		}
		out[s] = b
	}
	return out
}

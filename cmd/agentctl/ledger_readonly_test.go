package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/rofs"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A ledger in a folder that cannot be written (a read-only mount, a
// snapshot): ledger list, show, export and stats read it; the commands
// that write say it is read-only and what to do, exit 5, and change
// nothing. A -wal file that SQLite cannot read there is named, with the
// copy to make.
func TestReadOnlyLedgerFolder(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		// prepare leaves the ledger's files in dir (the ledger at path).
		prepare func(t *testing.T, path string)
	}{
		{"closed ledger", func(t *testing.T, path string) {}},
		{"closed ledger with an empty -wal", func(t *testing.T, path string) {
			if err := os.WriteFile(path+"-wal", nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ledger.db")
			seedLedger(t, path, now,
				seedRecord{tool: "create_payment", key: "ro-done", state: ledger.StateSucceeded, result: `{"content":[{"type":"text","text":"paid"}]}`},
				seedRecord{tool: "create_payment", key: "ro-wait", state: ledger.StatePendingApproval},
				seedRecord{tool: "create_payment", key: "ro-lost", state: ledger.StateUnknown},
			)
			tc.prepare(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the folder is made read-only with %s", rofs.Dir(t, dir))
			env := map[string]string{"MCPLEDGER_LEDGER": path, "HOME": t.TempDir()}

			list := inProcess(t, env, nil, "ledger", "list")
			list.wantExit(t, exitOK)
			for _, k := range []string{"ro-done", "ro-wait", "ro-lost"} {
				if !strings.Contains(list.stdout, k) {
					t.Errorf("ledger list lacks %s:\n%s", k, list.stdout)
				}
			}
			if show := inProcess(t, env, nil, "ledger", "show", "ro-done"); show.code != exitOK || !strings.Contains(show.stdout, "SUCCEEDED") {
				t.Errorf("ledger show = %d %q %q; want the SUCCEEDED record", show.code, show.stdout, show.stderr)
			}
			if exp := inProcess(t, env, nil, "ledger", "export"); exp.code != exitOK || strings.Count(exp.stdout, `"kind":"record"`) != 3 {
				t.Errorf("ledger export = %d, %d records, %q; want 3 records", exp.code, strings.Count(exp.stdout, `"kind":"record"`), exp.stderr)
			}
			if stats := inProcess(t, env, nil, "ledger", "stats"); stats.code != exitOK {
				t.Errorf("ledger stats = %d %q", stats.code, stats.stderr)
			}

			for _, args := range [][]string{
				{"ledger", "approve", "ro-wait"},
				{"ledger", "deny", "ro-wait", "--reason", "no"},
				{"ledger", "reconcile", "ro-lost", "--as", "failed"},
				{"ledger", "purge", "--older-than", "1s", "--force", "--yes"},
			} {
				got := inProcess(t, env, nil, args...)
				t.Logf("%s: %s", strings.Join(args, " "), strings.TrimSpace(got.stderr))
				got.wantExit(t, exitUnreachable, path, "is read-only", "ledger list, show, export and stats read it", "then run the same command again")
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("the ledger file changed")
			}
		})
	}

	t.Run("live copy with a -wal and no -shm", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "ledger.db")
		seedLedger(t, src, now, seedRecord{tool: "create_payment", key: "ro-done", state: ledger.StateSucceeded, result: `{"content":[{"type":"text","text":"paid"}]}`})
		live, err := sqlite.Open(context.Background(), src, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer live.Close()
		if _, err := live.Claim(context.Background(), ledger.ClaimRequest{ID: ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: "ro-new"}, Fingerprint: "f", Arguments: []byte(`{}`), Owner: "o"}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "ledger.db")
		for _, s := range []string{"", "-wal"} {
			b, err := os.ReadFile(src + s)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+s, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("the folder is made read-only with %s", rofs.Dir(t, dir))
		env := map[string]string{"MCPLEDGER_LEDGER": path, "HOME": t.TempDir()}
		got := inProcess(t, env, nil, "ledger", "list")
		got.wantExit(t, exitUnreachable, path+"-wal", "-shm", "read-only", "copy "+path+" with its -wal file into a writable folder")
		if strings.Contains(got.stderr, "move this file away") {
			t.Errorf("the message advises moving a good ledger away: %s", got.stderr)
		}
	})
}

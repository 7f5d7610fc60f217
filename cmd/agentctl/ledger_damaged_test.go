package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// A damaged ledger (cut short, or garbage over its B-tree pages) is named
// damaged, with "restore it from a backup", by every command that reads or
// writes it (exit 2, as the README says); "not an mcpledger database" is
// kept for a SQLite file of another application.
func TestDamagedLedgerSaysRestoreFromBackup(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	recs := make([]seedRecord, 0, 120)
	for i := range 120 {
		recs = append(recs, seedRecord{tool: "create_payment", key: fmt.Sprintf("dmg-%03d", i), state: ledger.StateSucceeded,
			result: `{"content":[{"type":"text","text":"payment ` + strings.Repeat("p", 300) + `"}]}`})
	}
	recs = append(recs, seedRecord{tool: "create_payment", key: "dmg-wait", state: ledger.StatePendingApproval})
	seedLedger(t, good, time.Now(), recs...)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 16*4096 {
		t.Fatalf("the seeded ledger is %d bytes; the test needs more pages", len(data))
	}
	garbage := append([]byte(nil), data...)
	for i := 2 * 4096; i < len(garbage); i++ {
		garbage[i] = byte(i*7 + 3)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"truncated", data[:len(data)/2]}, {"garbage in B-tree pages", garbage}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{
				{"ledger", "list"}, {"ledger", "show", "dmg-007"}, {"ledger", "stats"}, {"ledger", "export"},
				{"ledger", "approve", "dmg-wait"},
			} {
				path, env := ledgerEnv(t)
				if err := os.WriteFile(path, tc.data, 0o600); err != nil {
					t.Fatal(err)
				}
				got := inProcess(t, env, nil, args...)
				t.Logf("%s: %s", strings.Join(args, " "), strings.TrimSpace(got.stderr))
				got.wantExit(t, exitUsage, path, "is damaged", "restore it from a backup")
				if strings.Contains(got.stderr, "not an mcpledger database") {
					t.Errorf("%s on a damaged ledger says it is not a ledger: %s", strings.Join(args, " "), got.stderr)
				}
			}
		})
	}
	t.Run("another application's database", func(t *testing.T) {
		path, env := ledgerEnv(t)
		other := append([]byte(nil), data...)
		// The application_id field of the header (offset 68): a SQLite
		// database of some other program.
		copy(other[68:72], []byte{0x12, 0x34, 0x56, 0x78})
		if err := os.WriteFile(path, other, 0o600); err != nil {
			t.Fatal(err)
		}
		got := inProcess(t, env, nil, "ledger", "list")
		got.wantExit(t, exitUsage, path, "not an mcpledger database")
		if strings.Contains(got.stderr, "damaged") {
			t.Errorf("ledger list on another application's database says it is damaged: %s", got.stderr)
		}
	})
}

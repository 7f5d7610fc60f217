//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// In a pipe (no terminal, COLUMNS unset, and COLUMNS=80), every line a
// command prints fits 80 columns, and --wide keeps the whole.
func TestCommandsFit80ColumnsPiped(t *testing.T) {
	path, env := ledgerEnv(t)
	big := `{"note":"` + strings.Repeat("x", 400<<10) + `"}`
	seedLedger(t, path, time.Now(),
		seedRecord{tool: "create_payment", key: "order-2026-000123", session: "conversation-7f3a9c2e-with-a-long-name", state: ledger.StateSucceeded, result: okResult},
		seedRecord{tool: "create_payment", key: "order-2026-000124", session: "conversation-7f3a9c2e-with-a-long-name", state: ledger.StateUnknown},
		seedRecord{tool: "note", key: "big-1", state: ledger.StateSucceeded, result: okResult, args: big},
	)
	for _, cols := range []string{"", "80"} {
		env := map[string]string{"MCPLEDGER_LEDGER": path, "HOME": env["HOME"], "COLUMNS": cols}
		for _, args := range [][]string{
			{"verify"},
			{"ledger", "list"},
			{"ledger", "show", "order-2026-000124"},
			{"ledger", "show", "big-1"},
			{"ledger", "stats"},
		} {
			o := inProcess(t, env, nil, args...)
			if o.code != exitOK {
				t.Errorf("COLUMNS=%q agentctl %v: exit %d, stderr %q", cols, args, o.code, o.stderr)
			}
			for name, out := range map[string]string{"stdout": o.stdout, "stderr": o.stderr} {
				if wide := wideLines(out, 80); len(wide) > 0 {
					t.Errorf("COLUMNS=%q agentctl %v: %d %s lines wider than 80 columns, the first: %.200q", cols, args, len(wide), name, wide[0])
				}
			}
		}
	}
	o := inProcess(t, map[string]string{"MCPLEDGER_LEDGER": path, "HOME": env["HOME"]}, nil, "--wide", "ledger", "show", "big-1")
	if o.code != exitOK || !strings.Contains(o.stdout, strings.Repeat("x", 400<<10)) {
		t.Errorf("ledger show --wide: exit %d; want the whole 400 KB argument", o.code)
	}
}

// verify counts in words: "1 guarantee holds", not "1 guarantees hold".
func TestVerifySaysOneGuaranteeHolds(t *testing.T) {
	_, env := ledgerEnv(t)
	o := inProcess(t, env, nil, "verify", "--only", "G1")
	if o.code != exitOK || !strings.Contains(o.stderr, "1 guarantee holds, 0 skipped") {
		t.Errorf("verify --only G1: exit %d, stderr %q; want 1 guarantee holds", o.code, o.stderr)
	}
}

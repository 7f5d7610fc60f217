package main

import (
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

func TestCallDurability(t *testing.T) {
	e := newE2E(t)
	e.call(nil, append([]string{"--yes", "--durability", "write-behind", "--key", "wb-1"}, pay...)...).wantExit(t, exitOK)
	// Written behind, the outcome is still the ledger's once the command
	// is done: a repeat replays it.
	again := e.call(nil, append([]string{"--json", "--yes", "--key", "wb-1"}, pay...)...)
	again.wantExit(t, exitOK)
	if r := oneCall(t, again); !r.Replayed || r.State != string(ledger.StateSucceeded) {
		t.Errorf("repeat = %+v; want a replay of SUCCEEDED", r)
	}
	if n := e.paymentsFor("wb-1"); n != 1 {
		t.Errorf("payments for wb-1 = %d; want 1", n)
	}
	e.call(nil, append([]string{"--yes", "--durability", "fast", "--key", "wb-2"}, pay...)...).wantExit(t, exitUsage, "--durability", "write-behind")
	e.runEnv(nil, []string{"MCPLEDGER_DURABILITY=lazy"}, append([]string{"call", "--server", e.server, "--yes", "--key", "wb-3"}, pay...)...).
		wantExit(t, exitUsage, "MCPLEDGER_DURABILITY")
	if n := e.paymentsFor("wb-2") + e.paymentsFor("wb-3"); n != 0 {
		t.Errorf("payments after a bad --durability = %d; want 0", n)
	}
}

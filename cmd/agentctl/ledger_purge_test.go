//go:build unix

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// On a terminal, purge shows what it would delete and asks; only y
// deletes. In a pipe it purges as the README says (TestLedgerPurge).
func TestLedgerPurgeAsksOnATerminal(t *testing.T) {
	agentctl, _ := binaries(t)
	path, env := ledgerEnv(t)
	seedMixed(t, path, time.Now().Add(-48*time.Hour))
	environ := []string{"MCPLEDGER_LEDGER=" + path, "HOME=" + env["HOME"]}
	order1 := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-1"}

	no := startPTY(t, agentctl, environ, 80, "ledger", "purge")
	no.waitFor("purge these 4 records? [y/N]")
	no.typeLine("n")
	code, screen := no.exit()
	if code != exitOK || !strings.Contains(screen, "would purge 4 records") || !strings.Contains(screen, "nothing purged") || !strings.Contains(screen, "--yes") {
		t.Errorf("answered n: exit %d, screen %q; want exit 0 showing the count and saying nothing was purged and how to purge", code, screen)
	}
	if r := readRecord(t, path, order1); r.State != ledger.StateSucceeded {
		t.Fatalf("order-1 after answering n = %s; want it kept", r.State)
	}

	yes := startPTY(t, agentctl, environ, 80, "ledger", "purge")
	yes.waitFor("[y/N]")
	yes.typeLine("y")
	if code, screen := yes.exit(); code != exitOK || !strings.Contains(screen, "purged 4 records") {
		t.Errorf("answered y: exit %d, screen %q; want purged 4 records", code, screen)
	}

	// Nothing left to purge: nothing to ask.
	again := startPTY(t, agentctl, environ, 80, "ledger", "purge")
	if code, screen := again.exit(); code != exitOK || strings.Contains(screen, "[y/N]") {
		t.Errorf("with nothing to purge: exit %d, screen %q; want no question", code, screen)
	}
}

// Ctrl-C at the question purges nothing and exits 130.
func TestLedgerPurgeInterruptedAtTheQuestion(t *testing.T) {
	agentctl, _ := binaries(t)
	path, env := ledgerEnv(t)
	seedMixed(t, path, time.Now().Add(-48*time.Hour))
	r := startPTY(t, agentctl, []string{"MCPLEDGER_LEDGER=" + path, "HOME=" + env["HOME"]}, 80, "ledger", "purge")
	r.waitFor("[y/N]")
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code, screen := r.exit()
	if code != exitInterrupted || !strings.Contains(screen, "nothing purged") {
		t.Errorf("Ctrl-C at the question: exit %d, screen %q; want %d, nothing purged", code, screen, exitInterrupted)
	}
	if r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-1"}); r.State != ledger.StateSucceeded {
		t.Errorf("order-1 after Ctrl-C = %s; want it kept", r.State)
	}
}

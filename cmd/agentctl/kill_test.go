package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
)

// waitForLine polls path until it holds want: the payments server writes
// its fault line there when the call reached the handler.
func waitForLine(t *testing.T, path, want string, within time.Duration) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			b, _ := os.ReadFile(path)
			t.Fatalf("%s never showed %q within %v; it holds %q", path, want, within, b)
		}
	}
}

// showRecord reads a key's record with agentctl ledger show --json.
func (e *e2e) showRecord(key string) ledger.Record {
	e.t.Helper()
	o := e.run(nil, "--json", "ledger", "show", key)
	o.wantExit(e.t, exitOK)
	var r ledger.Record
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		e.t.Fatalf("ledger show --json = %q: %v", o.stdout, err)
	}
	return r
}

// An agentctl call killed (SIGKILL) while its request is in the handler
// leaves the key PROCESSING under a 30 s lease. The re-run on the same host
// finds the owner process gone and answers at once: UNKNOWN, exit 4, with
// the reconcile hint, and nothing runs twice.
func TestKilledCallRerunKnowsAtOnce(t *testing.T) {
	e := newE2E(t)
	faults := filepath.Join(e.dir, "faults.log")
	hanging := fmt.Sprintf(`sh -c "exec '%s' -db '%s' 2>>'%s'"`, e.payments, e.payDB, faults)
	cmd := exec.Command(e.agentctl, append([]string{"call", "--server", hanging, "--yes", "--key", "k-kill"}, pay...)...)
	cmd.Env = append(append([]string{}, e.env...), payments.FaultEnv+"="+payments.FaultHandler+"=hang")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLine(t, faults, payments.ReachedLine(payments.FaultHandler), time.Minute)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the killed agentctl exited cleanly")
	}
	if r := e.showRecord("k-kill"); r.State != ledger.StateProcessing || r.LeaseUntil.Before(time.Now().Add(5*time.Second)) {
		t.Fatalf("record after the kill = %s, lease until %v; want PROCESSING under a lease that has not ended", r.State, r.LeaseUntil)
	}

	start := time.Now()
	again := e.call(nil, append([]string{"--yes", "--key", "k-kill"}, pay...)...)
	t.Logf("the re-run after kill -9 answered in %v", time.Since(start))
	again.wantExit(t, exitUnknown, "reconcile", "k-kill")
	// The payments server is key-aware, so the re-run also re-sent the
	// call under its key; the server found its own handler's process gone
	// too and said the outcome is unknown.
	if r := e.showRecord("k-kill"); r.State != ledger.StateUnknown || (r.ErrorKind != ledger.KindOwnerDead && r.ErrorKind != "server_outcome_unknown") {
		t.Fatalf("record after the re-run = %s (%s); want UNKNOWN (%s, or the server's outcome_unknown)", r.State, r.ErrorKind, ledger.KindOwnerDead)
	}
	if n := e.paymentsFor("k-kill"); n != 0 {
		t.Fatalf("payments for k-kill = %d; want 0 (the handler hung before its commit and nothing ran again)", n)
	}
}

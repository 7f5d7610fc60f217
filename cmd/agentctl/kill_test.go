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

	// The payments server saw its client go and its handler's context
	// end before the commit: its transaction rolled back, and the guard
	// recorded that nothing happened (RETRYABLE).
	e.serverSettles("k-kill", ledger.StateRetryable)

	start := time.Now()
	again := e.call(nil, append([]string{"--yes", "--key", "k-kill"}, pay...)...)
	t.Logf("the re-run after kill -9 answered in %v", time.Since(start))
	// The re-run finds the owner process gone at once (UNKNOWN: it may
	// have run), re-sends the call under its key to the key-aware server,
	// which knows it did not, and runs it once.
	again.wantExit(t, exitOK)
	if r := e.showRecord("k-kill"); r.State != ledger.StateSucceeded || r.Fence < 2 {
		t.Fatalf("record after the re-run = %s, fence %d; want SUCCEEDED after a take-over (fence 2 or more)", r.State, r.Fence)
	}
	if n := e.paymentsFor("k-kill"); n != 1 {
		t.Fatalf("payments for k-kill = %d; want 1 (the hung handler rolled back, the re-sent call paid once)", n)
	}
}

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// autoPolicy names find_payment the probe of create_payment, with a quiet
// period short enough to have passed by the time the test reconciles.
func autoPolicy(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "auto-policy.json")
	if err := os.WriteFile(p, []byte(`{"version": 1,
 "rules": [{"tool": "create_payment", "action": "allow"}],
 "reconcile": [{"tool": "create_payment", "probe": "find_payment",
   "arguments": {"idempotency_key": "{{.Key}}"}, "absent": "not_run", "quiet": "1ms"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// strandTwo leaves two UNKNOWN records at payments -unguarded, a server
// that ignores keys: au-paid, whose payment was committed before the
// answer was lost, and au-none, whose server died before it paid.
func strandTwo(t *testing.T, e *e2e, bare string) {
	t.Helper()
	for _, c := range []struct{ key, fault string }{{"au-paid", "handler-committed=sleep:30s"}, {"au-none", "handler=sleep:30s"}} {
		e.run(nil, append([]string{"call", "--server", bare + " -fault " + c.fault, "--timeout", "8s", "--yes", "--key", c.key}, pay...)...).wantExit(t, exitUnknown)
	}
	if a, b := e.paymentsFor("au-paid"), e.paymentsFor("au-none"); a != 1 || b != 0 {
		t.Fatalf("payments for au-paid, au-none = %d, %d; want 1 and 0", a, b)
	}
}

// agentctl ledger reconcile --auto settles, with no person, the UNKNOWN
// records a server that ignores keys left: the one whose payment exists
// by the probe's answer (SUCCEEDED, replayed by the next call), the one
// whose payment does not exist as not_run once the quiet period passed
// (RETRYABLE: the next call pays once).
func TestLedgerReconcileAutoByProbe(t *testing.T) {
	e := newE2E(t)
	bare := e.server + " -unguarded"
	strandTwo(t, e, bare)
	policy := autoPolicy(t, e.dir)

	o := e.run(nil, "ledger", "reconcile", "--auto", "--server", bare, "--policy", policy)
	o.wantExit(t, exitOK)
	for _, want := range []string{
		"au-paid create_payment: found by probe -> SUCCEEDED",
		"au-none create_payment: not_run by probe -> RETRYABLE",
		"2 due, 2 settled, 0 still UNKNOWN, 0 errors",
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("reconcile --auto printed:\n%s\nwant a line with %q", o.stdout, want)
		}
	}
	if r := e.record("au-paid"); r.State != ledger.StateSucceeded || r.Reconciled == nil || r.Reconciled.Method != ledger.MethodProbe {
		t.Errorf("au-paid = %s, resolution %+v; want SUCCEEDED by probe", r.State, r.Reconciled)
	}
	if r := e.record("au-none"); r.State != ledger.StateRetryable {
		t.Errorf("au-none = %s; want RETRYABLE", r.State)
	}
	// Nothing is due any more: a second pass finds nothing.
	again := e.run(nil, "ledger", "reconcile", "--auto", "--json", "--server", bare, "--policy", policy)
	again.wantExit(t, exitOK)
	if !strings.Contains(again.stdout, `{"summary":{"due":0,"settled":0,"unknown":0,"errors":0}}`) {
		t.Errorf("second pass printed %s; want an empty summary", again.stdout)
	}
	// The next calls: the found payment replayed, the absent one paid once.
	e.run(nil, append([]string{"call", "--server", bare, "--yes", "--key", "au-paid"}, pay...)...).wantExit(t, exitOK)
	e.run(nil, append([]string{"call", "--server", bare, "--yes", "--key", "au-none"}, pay...)...).wantExit(t, exitOK)
	if a, b := e.paymentsFor("au-paid"), e.paymentsFor("au-none"); a != 1 || b != 1 {
		t.Errorf("payments for au-paid, au-none after the next calls = %d, %d; want 1 and 1", a, b)
	}
}

// Without a probe for the tool and at a server that ignores keys, --auto
// says nothing can settle the records and changes nothing; --layer server
// is the server's to settle.
func TestLedgerReconcileAutoUsage(t *testing.T) {
	e := newE2E(t)
	bare := e.server + " -unguarded"
	strandTwo(t, e, bare)
	noProbe := filepath.Join(e.dir, "plain.json")
	if err := os.WriteFile(noProbe, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.run(nil, "ledger", "reconcile", "--auto", "--server", bare, "--policy", noProbe).wantExit(t, exitUsage, "probe", "reconcile")
	e.run(nil, "ledger", "reconcile", "--auto", "--layer", "server", "--server", bare).wantExit(t, exitUsage, "server's own reconcilers")
	e.run(nil, "ledger", "reconcile", "--auto", "au-paid", "--server", bare).wantExit(t, exitUsage, "drop KEY")
	e.run(nil, "ledger", "reconcile", "--watch", "au-paid", "--as", "failed").wantExit(t, exitUsage, "--auto")
	if r := e.record("au-paid"); r.State != ledger.StateUnknown {
		t.Errorf("au-paid after refused runs = %s; want UNKNOWN", r.State)
	}
}

// At a key-aware server (payments with its guard and reconciler), --auto
// re-sends the UNKNOWN call with its key: the server answers with the
// payment it made, and nothing is paid twice.
func TestLedgerReconcileAutoByResend(t *testing.T) {
	e := newE2E(t)
	e.run(nil, append([]string{"call", "--server", e.server + " -fault handler-committed=sleep:30s", "--timeout", "8s", "--yes", "--key", "au-rs"}, pay...)...).wantExit(t, exitUnknown)
	o := e.run(nil, "ledger", "reconcile", "--auto", "--server", e.server)
	o.wantExit(t, exitOK)
	if !strings.Contains(o.stdout, "au-rs create_payment: found by resend -> SUCCEEDED") {
		t.Errorf("reconcile --auto printed:\n%s\nwant au-rs found by resend", o.stdout)
	}
	if n := e.paymentsFor("au-rs"); n != 1 {
		t.Errorf("payments for au-rs = %d; want 1", n)
	}
}

// --watch runs passes until SIGINT, which ends it with exit 0.
func TestLedgerReconcileAutoWatchEndsOnSignal(t *testing.T) {
	e := newE2E(t)
	bare := e.server + " -unguarded"
	strandTwo(t, e, bare)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, "ledger", "reconcile", "--auto", "--watch", "--every", "1h", "--server", bare, "--policy", autoPolicy(t, e.dir))
	cmd.Env = e.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), " due, ") {
			break // the first pass is over
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		seen = append(seen, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reconcile --watch after SIGINT = %v; want exit 0\nstdout: %s\nstderr: %s", err, strings.Join(seen, "\n"), errb.String())
	}
	if got := strings.Join(seen, "\n"); !strings.Contains(got, "2 due, 2 settled") {
		t.Errorf("reconcile --watch printed:\n%s\nwant the first pass to settle both", got)
	}
	if r := e.record("au-paid"); r.State != ledger.StateSucceeded {
		t.Errorf("au-paid = %s; want SUCCEEDED", r.State)
	}
}

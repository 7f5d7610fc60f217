package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

// A person reconciles, with the real binary, the UNKNOWN records that
// calls left behind at a server that ignores keys: not_run after checking
// that nothing was paid, so the same key pays once on its next call; and
// succeeded with the bank's answer as the result, which the next call
// with the key replays, marked reconciled, paying nothing more.
func TestLedgerReconcileBinary(t *testing.T) {
	e := newE2E(t)
	bare := e.server + " -unguarded"
	call := func(args ...string) outcome {
		t.Helper()
		return e.run(nil, append(append([]string{"call", "--server", bare, "--yes"}, args...), pay...)...)
	}

	t.Run("not_run", func(t *testing.T) {
		first := e.run(nil, append([]string{"call", "--server", bare + " -fault handler=sleep:30s", "--timeout", "8s", "--yes", "--key", "nr-1"}, pay...)...)
		first.wantExit(t, exitUnknown)
		if n := e.paymentsFor("nr-1"); n != 0 {
			t.Fatalf("payments for nr-1 after the timeout = %d; want 0 (the server died before its commit)", n)
		}
		again := call("--key", "nr-1")
		again.wantExit(t, exitUnknown)
		if n := e.paymentsFor("nr-1"); n != 0 {
			t.Fatalf("payments for nr-1 while UNKNOWN = %d; want 0: an UNKNOWN call is never sent again", n)
		}
		e.run(nil, "ledger", "reconcile", "nr-1", "--as", "not_run", "--note", "no payment nr-1 at the bank").wantExit(t, exitOK)
		show := e.run(nil, "--wide", "ledger", "show", "nr-1") // the whole finding
		show.wantExit(t, exitOK)
		for _, want := range []string{"RETRYABLE", "reconciled", "not_run by person (" + osAccount() + ")", "no payment nr-1 at the bank", "findings"} {
			if !strings.Contains(show.stdout, want) {
				t.Errorf("ledger show nr-1 does not show %q:\n%s", want, show.stdout)
			}
		}
		run := call("--key", "nr-1")
		run.wantExit(t, exitOK)
		if n := e.paymentsFor("nr-1"); n != 1 {
			t.Errorf("payments for nr-1 after not_run and a call = %d; want 1", n)
		}
		if r := e.record("nr-1"); r.State != ledger.StateSucceeded || r.Reconciled != nil || r.FindingCount != 1 {
			t.Errorf("record after the run = %s, resolution %+v, %d findings; want SUCCEEDED by the tool, the finding kept", r.State, r.Reconciled, r.FindingCount)
		}
	})

	t.Run("succeeded", func(t *testing.T) {
		first := e.run(nil, append([]string{"call", "--server", bare + " -fault handler-committed=sleep:30s", "--timeout", "8s", "--yes", "--key", "fd-1"}, pay...)...)
		first.wantExit(t, exitUnknown)
		if n := e.paymentsFor("fd-1"); n != 1 {
			t.Fatalf("payments for fd-1 = %d; want 1 (the fault comes after the commit)", n)
		}
		file := filepath.Join(t.TempDir(), "found.json")
		if err := os.WriteFile(file, []byte(`{"content":[{"type":"text","text":"payment fd-1 found at the bank"}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		e.run(nil, "ledger", "reconcile", "fd-1", "--as", "succeeded", "--result-file", file, "--note", "bank statement line 7").wantExit(t, exitOK)
		replay := call("--json", "--key", "fd-1")
		replay.wantExit(t, exitOK)
		for _, want := range []string{"payment fd-1 found at the bank", `"reconciled"`, `"method":"person"`} {
			if !strings.Contains(replay.stdout, want) {
				t.Errorf("the call after reconcile printed %s; want %q in it", replay.stdout, want)
			}
		}
		if n := e.paymentsFor("fd-1"); n != 1 {
			t.Errorf("payments for fd-1 after the replay = %d; want still 1", n)
		}
		show := e.run(nil, "--wide", "ledger", "show", "fd-1") // the whole finding
		show.wantExit(t, exitOK)
		for _, want := range []string{"SUCCEEDED", "found by person (" + osAccount() + ")", "bank statement line 7"} {
			if !strings.Contains(show.stdout, want) {
				t.Errorf("ledger show fd-1 does not show %q:\n%s", want, show.stdout)
			}
		}
	})
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
)

// Every state a call can end in, driven through agentctl call with the
// real binaries: the exit code, the --json reason and the message all say
// what the state's row says, whatever the error chain under it. The
// server killed after its commit is the case that matters most: the
// payment exists, so the answer is UNKNOWN (exit 4), never "nothing was
// sent" (5) or "failed" (1), whatever the reconnect after the kill said.
func TestExitFromStateRow(t *testing.T) {
	type run func(t *testing.T, e *e2e, key string) outcome
	call := func(stdin *string, extra ...string) run {
		return func(t *testing.T, e *e2e, key string) outcome {
			return e.call(stdin, append(append([]string{"--json", "--key", key}, extra...), pay...)...)
		}
	}
	tests := []struct {
		name   string
		run    run
		state  ledger.State // the client's record afterwards; "" when none was written
		code   int
		reason string   // the --json error's reason; "" when the result is printed
		says   []string // the error line names these
		never  []string // and none of these
		paid   int
	}{
		{name: "succeeded", run: call(nil, "--yes"), state: ledger.StateSucceeded, code: exitOK, paid: 1},
		{name: "failed: the tool said no", state: ledger.StateFailed, code: exitFailed,
			run: func(t *testing.T, e *e2e, key string) outcome {
				return e.run(nil, append([]string{"call", "--json", "--server", e.server + " -limit 100", "--yes", "--key", key}, pay...)...)
			},
			says: []string{"tool error", "it ran"}, never: []string{"nothing ran"}},
		{name: "rejected: the server refused the arguments", state: ledger.StateRejected, code: exitUsage, reason: reasonRejected,
			run: func(t *testing.T, e *e2e, key string) outcome {
				return e.call(nil, "--json", "--yes", "--key", key, "create_payment", "amount_cents=1250", "currency=eur", "payee=acme")
			},
			says: []string{"refused the arguments", "nothing ran"}},
		{name: "rejected: no one to confirm", run: call(nil), state: ledger.StateRejected, code: exitUsage, reason: reasonNoConfirmer,
			says: []string{"confirm", "nothing ran", "--yes", "policy"}, never: []string{"refused the arguments"}},
		{name: "rejected: no valid answer on a pipe", run: call(answer("x\n")), state: ledger.StateRejected, code: exitUsage, reason: reasonNoConfirmer,
			says: []string{"no one confirmed", "nothing ran", "--yes", "policy"}, never: []string{"refused the arguments", "correct the arguments"}},
		{name: "denied", run: call(answer("3\ntoo much\n")), state: ledger.StateDenied, code: exitDenied, reason: reasonDenied,
			says: []string{"denied", "too much", "nothing ran"}},
		{name: "unknown: stdio server SIGKILLed after commit", run: killedAfterCommitStdio, state: ledger.StateUnknown, code: exitUnknown,
			reason: reasonOutcomeUnknown, says: []string{"unknown", "reconcile"}, never: []string{"nothing ran", "nothing was sent"}, paid: 1},
		{name: "unknown: HTTP server SIGKILLed after commit", run: killedAfterCommitHTTP, state: ledger.StateUnknown, code: exitUnknown,
			reason: reasonOutcomeUnknown, says: []string{"unknown", "reconcile"}, never: []string{"nothing ran", "nothing was sent"}, paid: 1},
		{name: "in progress in another process", run: inProgressElsewhere, state: ledger.StateProcessing, code: exitUnknown,
			reason: reasonInProgress, says: []string{"in progress"}, never: []string{"nothing ran"}, paid: 1},
		{name: "awaiting approval",
			run: func(t *testing.T, e *e2e, key string) outcome {
				return e.runEnv(nil, []string{e.queuePolicy("")}, append([]string{"call", "--json", "--server", e.server, "--key", key}, pay...)...)
			},
			state: ledger.StatePendingApproval, code: exitAwaiting, reason: reasonAwaitingApproval, says: []string{"approv", "nothing ran"}},
		{name: "nothing sent: the server is down", code: exitUnreachable, reason: reasonUnreachable,
			run: func(t *testing.T, e *e2e, key string) outcome {
				return e.run(nil, append([]string{"call", "--json", "--url", mcptest.RefusedURL(t) + "/mcp", "--yes", "--key", key}, pay...)...)
			},
			says: []string{"cannot reach", "nothing ran"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t)
			key := fmt.Sprintf("row-%d", i)
			o := tc.run(t, e, key)
			o.wantExit(t, tc.code, tc.says...)
			if tc.code != exitOK {
				last := o.stderr[strings.LastIndex(strings.TrimRight(o.stderr, "\n"), "\n")+1:]
				for _, w := range tc.never {
					if strings.Contains(last, w) {
						t.Errorf("the error line of a %s call says %q: %s", tc.state, w, last)
					}
				}
			}
			got := oneCall(t, o)
			if got.Error != nil {
				t.Logf("exit %d, --json reason %s, state %s", o.code, got.Error.Reason, got.Error.State)
			} else {
				t.Logf("exit %d, --json result, state %s", o.code, got.State)
			}
			switch {
			case tc.reason == "":
				if got.Error != nil || got.State != string(tc.state) {
					t.Errorf("--json = %+v (error %+v); want the result of a %s call", got, got.Error, tc.state)
				}
			case got.Error == nil:
				t.Errorf("--json = %+v; want an error with reason %s", got, tc.reason)
			case got.Error.Reason != tc.reason || got.Error.Exit != tc.code || got.Error.State != string(tc.state):
				t.Errorf("--json error = reason %s, exit %d, state %q; want %s, %d, %q", got.Error.Reason, got.Error.Exit, got.Error.State, tc.reason, tc.code, tc.state)
			}
			if tc.state != "" {
				if r := e.record(key); r.State != tc.state {
					t.Errorf("the client's record = %s (%s); want %s", r.State, r.ErrorKind, tc.state)
				}
			}
			if n := e.paymentsFor(key); n != tc.paid {
				t.Errorf("payments for %s = %d; want %d", key, n, tc.paid)
			}
		})
	}
}

// killedAfterCommitStdio calls create_payment on a stdio server that hangs
// after its commit, SIGKILLs it once the payment is in the payments table,
// and keeps it down: the client's reconnect finds a server that will not
// start.
func killedAfterCommitStdio(t *testing.T, e *e2e, key string) outcome {
	pidFile := filepath.Join(e.dir, "server.pid")
	script := filepath.Join(e.dir, "server.sh")
	body := fmt.Sprintf("#!/bin/sh\n# Serves once: a restart finds the pid file and gives up.\n[ -e '%s' ] && exit 1\necho $$ > '%s'\nexec '%s' -db '%s' -fault handler-committed=hang\n",
		pidFile, pidFile, e.payments, e.payDB)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return killAfterCommit(t, e, key, append([]string{"call", "--json", "--server", "'" + script + "'", "--yes", "--key", key}, pay...),
		func() int {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the server's pid: %v", err)
			}
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err != nil {
				t.Fatalf("the server's pid file holds %q: %v", b, err)
			}
			return pid
		})
}

// killedAfterCommitHTTP is the same over streamable HTTP: once killed, the
// server's port refuses the reconnect.
func killedAfterCommitHTTP(t *testing.T, e *e2e, key string) outcome {
	url, srv := e.servePaymentsHTTP("-fault", "handler-committed=hang")
	return killAfterCommit(t, e, key, append([]string{"call", "--json", "--url", url, "--yes", "--key", key}, pay...),
		func() int { return srv.Process.Pid })
}

// killAfterCommit runs agentctl with args, waits until the payment of key
// is committed, SIGKILLs the server pid names, and returns agentctl's
// outcome.
func killAfterCommit(t *testing.T, e *e2e, key string, args []string, pid func() int) outcome {
	done := make(chan outcome, 1)
	go func() { done <- e.runQuiet(args...) }()
	waitFor(t, "the payment of "+key, func() bool { return e.paymentsFor(key) == 1 })
	if err := syscall.Kill(pid(), syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL the server: %v", err)
	}
	return <-done
}

// inProgressElsewhere leaves key PROCESSING in one agentctl (its server
// hangs after the commit) and calls it again from another, which gives
// up waiting for the first.
func inProgressElsewhere(t *testing.T, e *e2e, key string) outcome {
	url, _ := e.servePaymentsHTTP("-fault", "handler-committed=hang")
	first := exec.Command(e.agentctl, append([]string{"call", "--url", url, "--yes", "--key", key}, pay...)...)
	first.Env = e.env
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM ends the first call as a person's Ctrl-C would.
		_ = first.Process.Signal(syscall.SIGTERM)
		_ = first.Wait()
	})
	waitFor(t, "the payment of "+key, func() bool { return e.paymentsFor(key) == 1 })
	return e.run(nil, append([]string{"call", "--json", "--url", url, "--timeout", "8s", "--yes", "--key", key}, pay...)...)
}

// After the kill above, the next call with the key needs no person: the
// restarted key-aware payments server meets its own UNKNOWN record, its
// reconciler finds the payment in the payments table, and agentctl exits 0
// with the first payment; the table still holds one.
func TestNextCallAfterKillAfterCommitGetsThePayment(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(*testing.T, *e2e, string) outcome
		next func(*e2e) []string
	}{
		{"stdio", killedAfterCommitStdio, func(e *e2e) []string { return []string{"--server", e.server} }},
		{"http", killedAfterCommitHTTP, func(e *e2e) []string {
			url, _ := e.servePaymentsHTTP()
			return []string{"--url", url}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t)
			const key = "after-kill-1"
			tc.kill(t, e, key).wantExit(t, exitUnknown)
			paid, err := e.paymentIDs(key)
			if err != nil || len(paid) != 1 {
				t.Fatalf("payments for %s after the kill = %v, %v; want 1", key, paid, err)
			}
			o := e.run(nil, append(append([]string{"call", "--json"}, tc.next(e)...), append([]string{"--yes", "--key", key}, pay...)...)...)
			o.wantExit(t, exitOK)
			if !strings.Contains(o.stdout, paid[0]) || !strings.Contains(o.stdout, `"reconciled"`) {
				t.Errorf("next call printed %s; want payment %s, reconciled by the server", o.stdout, paid[0])
			}
			if n := e.paymentsFor(key); n != 1 {
				t.Errorf("payments for %s after the next call = %d; want 1", key, n)
			}
			if r := e.record(key); r.State != ledger.StateSucceeded {
				t.Errorf("the client's record = %s (%s); want SUCCEEDED", r.State, r.ErrorKind)
			}
		})
	}
}

// paymentIDs lists the ids of the payments made with key, from the
// payments example's -list.
func (e *e2e) paymentIDs(key string) ([]string, error) {
	out, err := exec.Command(e.payments, "-db", e.payDB, "-list").Output()
	if err != nil {
		return nil, fmt.Errorf("payments -list: %w", err)
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.HasPrefix(f[0], "pay_") && f[5] == key {
			ids = append(ids, f[0])
		}
	}
	return ids, nil
}

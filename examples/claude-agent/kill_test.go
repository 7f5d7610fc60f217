package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// The agent process SIGKILLed while its create_payment is in flight, and
// started again with the same chain: no second payment, and the call that
// was in flight ends SUCCEEDED (the key-aware payments server ran it once,
// or its reconciler found the payment) or UNKNOWN (no one can tell), never
// re-run blindly. The payments server is the agent's stdio child; a fault
// hook holds its handler where it should be killed, before or after its
// commit.
func TestAgentKilledMidRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		point string
		// faults are armed in both runs' payments servers, beside the
		// first run's hang.
		faults string
		// want: the states the call may end in, each with the payments
		// that go with it.
		want map[ledger.State]int
	}{
		// Nothing committed: the server's record says nothing ran, so the
		// second run's resend runs it, once.
		{"before the commit", "handler", "", map[ledger.State]int{ledger.StateSucceeded: 1, ledger.StateUnknown: 0}},
		// Paid, and the answer lost with the process: the second run
		// re-sends the key, the server meets its UNKNOWN record and its
		// reconciler finds the payment in the payments table: the
		// re-planned call gets the payment id, without a person.
		{"after the commit", "handler-committed", "", map[ledger.State]int{ledger.StateSucceeded: 1}},
		// The same without create_payment's reconciler (as before there
		// was one): UNKNOWN until a person reconciles it.
		{"after the commit without a reconciler", "handler-committed", "reconciler=missing", map[ledger.State]int{ledger.StateUnknown: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			agent := program(t, "claude-agent")
			args := []string{"-server", strings.Join(w.stdio(t), " "), "-ledger", w.ledger, "-chain", "order-1001", "-yes", "-max-turns", "4"}
			env := func(api *scriptedAPI, fault string) []string {
				return append(os.Environ(), "ANTHROPIC_API_KEY=scripted", "ANTHROPIC_BASE_URL="+api.URL, "PAYMENTS_FAULT="+fault)
			}

			first := newScriptedAPI(t, callTool("create_payment", payment(1250)), finish("Paid."))
			a := exec.Command(agent, args...)
			a.Env = env(first, strings.Trim(tc.point+"=hang,"+tc.faults, ","))
			stderr, err := a.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			reached := "payments: fault " + tc.point + " reached"
			lines := lineReader(stderr)
			deadline := time.After(60 * time.Second)
		wait:
			for {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatalf("the agent ended before its payment reached %s", tc.point)
					}
					if strings.Contains(line, reached) {
						break wait
					}
				case <-deadline:
					a.Process.Kill()
					t.Fatalf("the payment did not reach %s within 60s", tc.point)
				}
			}
			if err := a.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL: %v", err)
			}
			go drain(lines)
			if err := a.Wait(); err == nil {
				t.Fatal("the killed agent exited 0")
			}

			second := newScriptedAPI(t, callTool("create_payment", payment(1250)), finish("Done."))
			b := exec.Command(agent, args...)
			b.Env = env(second, tc.faults)
			if out, err := b.CombinedOutput(); err != nil {
				t.Fatalf("the agent started again: %v\n%s", err, out)
			}

			recs := w.records(t, "create_payment")
			if len(recs) != 1 {
				t.Fatalf("create_payment records = %d; want 1, the same key in both runs", len(recs))
			}
			state, paid := recs[0].State, w.paid(t)
			wantPaid, ok := tc.want[state]
			if !ok || paid != wantPaid {
				t.Fatalf("the call ended %s with %d payments; want one of %v", state, paid, tc.want)
			}
			shown := second.shown(t, 1)
			switch state {
			case ledger.StateSucceeded:
				if ids := w.paymentIDs(t); shown.IsError || paymentID.FindString(shown.Text) != ids[0] {
					t.Fatalf("the model was shown %q; want payment %s", shown.Text, ids[0])
				}
				if tc.point == "handler-committed" {
					// The server's record was settled by its reconciler, not
					// by a person and not by a second run of the handler.
					srv := w.serverRecord(t, recs[0].Key)
					if srv.State != ledger.StateSucceeded || srv.Reconciled == nil || srv.Reconciled.Method != ledger.MethodReconciler {
						t.Fatalf("the server's record is %s, reconciled %v; want SUCCEEDED by its reconciler", srv.State, srv.Reconciled.Text())
					}
					t.Logf("server record: %s", srv.Reconciled.Text())
				}
			case ledger.StateUnknown:
				if !shown.IsError || !strings.Contains(shown.Text, "outcome is unknown") || !strings.Contains(shown.Text, recs[0].Key) {
					t.Fatalf("the model was shown %q (isError %v); want that the outcome of %s is unknown", shown.Text, shown.IsError, recs[0].Key)
				}
			}
		})
	}
}

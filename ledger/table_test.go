package ledger_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// diagram is the state diagram of DESIGN.md read edge by edge, with "" for
// a key that has no live record. Every (state, trigger) pair not listed
// here must be refused.
var diagram = map[ledger.State]map[ledger.Trigger]ledger.State{
	"": {
		ledger.OnClaim:            ledger.StateProcessing,
		ledger.OnClaimForApproval: ledger.StatePendingApproval,
	},
	ledger.StatePendingApproval: {
		ledger.OnApprove:      ledger.StateProcessing,
		ledger.OnApproveLater: ledger.StatePendingApproval, // a queued call approved, not yet run
		ledger.OnDeny:         ledger.StateDenied,
		ledger.OnNoAnswer:     ledger.StateRejected, // no one to ask, prompt aborted or killed
		ledger.OnLeaseExpired: ledger.StateRejected, // approval expired
		ledger.OnOwnerDead:    ledger.StateRejected, // prompt killed
	},
	ledger.StateProcessing: {
		ledger.OnSucceeded:    ledger.StateSucceeded,
		ledger.OnFailed:       ledger.StateFailed,
		ledger.OnNotSent:      ledger.StateRetryable,
		ledger.OnRefused:      ledger.StateRejected, // -32602, -31004
		ledger.OnDeny:         ledger.StateDenied,   // an upstream ledger (a proxy) said no
		ledger.OnAmbiguous:    ledger.StateUnknown,
		ledger.OnLeaseExpired: ledger.StateUnknown,
		ledger.OnOwnerDead:    ledger.StateUnknown,
	},
	ledger.StateRetryable: {
		ledger.OnClaim:            ledger.StateProcessing,
		ledger.OnClaimForApproval: ledger.StatePendingApproval,
	},
	ledger.StateRejected: { // as a new claim, with any arguments
		ledger.OnClaim:            ledger.StateProcessing,
		ledger.OnClaimForApproval: ledger.StatePendingApproval,
	},
	ledger.StateUnknown: { // reconcile
		ledger.OnSucceeded:    ledger.StateSucceeded, // found, or the fenced owner's late result
		ledger.OnFailed:       ledger.StateFailed,
		ledger.OnNotRun:       ledger.StateRetryable, // provably not run: the key runs on its next call
		ledger.OnInconclusive: ledger.StateUnknown,   // no evidence: the attempt joins the history
		ledger.OnResend:       ledger.StateProcessing,
	},
	ledger.StateSucceeded: {},
	ledger.StateFailed:    {},
	ledger.StateDenied:    {},
}

func TestNextEveryPair(t *testing.T) {
	if len(diagram) != len(ledger.States)+1 {
		t.Fatalf("the diagram here lists %d states; want every state and no record", len(diagram))
	}
	if len(ledger.Triggers) != 16 {
		t.Fatalf("len(Triggers) = %d; want 16: a new trigger needs its edges listed here", len(ledger.Triggers))
	}
	edges := 0
	for from, out := range diagram {
		for _, on := range ledger.Triggers {
			name := string(from)
			if from == "" {
				name = "none"
			}
			t.Run(fmt.Sprintf("%s/%s", name, on), func(t *testing.T) {
				got, err := ledger.Next(from, on)
				want, ok := out[on]
				if !ok {
					if !errors.Is(err, ledger.ErrIllegalTransition) || got != "" {
						t.Errorf("Next(%q, %s) = %q, %v; want ErrIllegalTransition", from, on, got, err)
					}
					return
				}
				edges++
				if err != nil || got != want {
					t.Errorf("Next(%q, %s) = %q, %v; want %s", from, on, got, err, want)
				}
			})
		}
	}
	if edges != 25 {
		t.Errorf("%d edges checked; want the diagram's 25", edges)
	}
	for _, on := range []ledger.Trigger{"", "explode"} {
		if _, err := ledger.Next(ledger.StateProcessing, on); !errors.Is(err, ledger.ErrIllegalTransition) {
			t.Errorf("Next(PROCESSING, %q) = %v; want ErrIllegalTransition", on, err)
		}
	}
	if _, err := ledger.Next("BOGUS", ledger.OnClaim); !errors.Is(err, ledger.ErrIllegalTransition) {
		t.Errorf("Next(BOGUS, claim) = %v; want ErrIllegalTransition", err)
	}
}

// CheckTransition is the diagram's edges between states: every non-claim
// edge, and nothing else.
func TestCheckTransitionMatchesDiagram(t *testing.T) {
	want := map[[2]ledger.State]bool{}
	for from, out := range diagram {
		for on, to := range out {
			if from != "" && on != ledger.OnClaim && on != ledger.OnClaimForApproval {
				want[[2]ledger.State{from, to}] = true
			}
		}
	}
	for _, from := range ledger.States {
		for _, to := range ledger.States {
			err := ledger.CheckTransition(from, to)
			if want[[2]ledger.State{from, to}] != (err == nil) {
				t.Errorf("CheckTransition(%s, %s) = %v; the diagram says legal = %v", from, to, err, want[[2]ledger.State{from, to}])
			}
		}
	}
}

func TestAct(t *testing.T) {
	cases := []struct {
		rec  ledger.Record
		want ledger.Action
	}{
		{ledger.Record{State: ledger.StatePendingApproval}, ledger.ActWait},
		{ledger.Record{State: ledger.StateProcessing}, ledger.ActWait},
		{ledger.Record{State: ledger.StateSucceeded}, ledger.ActReplay},
		{ledger.Record{State: ledger.StateFailed}, ledger.ActReplay},
		{ledger.Record{State: ledger.StateRetryable}, ledger.ActReclaim},
		{ledger.Record{State: ledger.StateRejected}, ledger.ActReclaim},
		{ledger.Record{State: ledger.StateUnknown}, ledger.ActReconcile},
		{ledger.Record{State: ledger.StateDenied}, ledger.ActDenied},
	}
	seen := map[ledger.State]bool{}
	for _, tc := range cases {
		seen[tc.rec.State] = true
		if got := ledger.Act(&tc.rec); got != tc.want {
			t.Errorf("Act(%s) = %q; want %q", tc.rec.State, got, tc.want)
		}
		// A tombstone may have run, whatever state it kept.
		tomb := tc.rec
		tomb.Tombstone = true
		if got := ledger.Act(&tomb); got != ledger.ActReconcile {
			t.Errorf("Act(%s tombstone) = %q; want %q", tc.rec.State, got, ledger.ActReconcile)
		}
	}
	for _, s := range ledger.States {
		if !seen[s] {
			t.Errorf("Act has no case here for %s", s)
		}
	}
}

func TestExplainRejected(t *testing.T) {
	at := time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)
	base := ledger.Record{ID: ledger.ID{Tenant: "t", Tool: "create_payment", Key: "order-7"}, State: ledger.StateRejected, CreatedAt: at, UpdatedAt: at}
	cases := []struct {
		kind, msg string
		says      string
	}{
		{ledger.KindRefused, "invalid params: payee:\n  want string", "the server refused the arguments: invalid params: payee: want string; correct them"},
		{ledger.KindRefused, "", "the server refused the arguments; correct them"},
		{ledger.KindApprovalExpired, "", "no one approved it before the approval expired"},
		{ledger.KindOwnerDead, "", "the confirmation prompt ended without an answer"},
		{ledger.KindLeaseExpired, "", "the confirmation prompt ended without an answer"},
		{ledger.KindNoAnswer, "", "no one confirmed it"},
		{ledger.KindNoAnswer, "no terminal to ask", "no one confirmed it: no terminal to ask"},
		{"jsonrpc_-32602", `calling "tools/call": unknown tool "refund"`, `the server refused the arguments: calling "tools/call": unknown tool "refund"; correct them`},
		{"key_invalid", "key has a space", "the server refused the request: key has a space; correct it"},
		{"", "", "the server refused the request; correct it"},
	}
	for _, tc := range cases {
		t.Run(tc.kind+"/"+tc.msg, func(t *testing.T) {
			r := base
			r.ErrorKind, r.ErrorMessage = tc.kind, tc.msg
			got := ledger.Explain(&r)
			for _, want := range []string{tc.says, "did not run", "nothing took effect", "may be made again", `ledger_status with key "order-7"`, "create_payment"} {
				if !strings.Contains(got, want) {
					t.Errorf("Explain(REJECTED %s) = %q; want it to say %q", tc.kind, got, want)
				}
			}
			if strings.Contains(got, "Do not issue it again") || strings.Contains(got, "\n") {
				t.Errorf("Explain(REJECTED %s) = %q; want one line that does not forbid the call", tc.kind, got)
			}
		})
	}
	if got := ledger.Explain(nil); got == "" {
		t.Errorf("Explain(nil) is empty; want a sentence")
	}
}

// A record a reconciler found not run tells the model so, and that the
// same call may be made again.
func TestExplainNotRun(t *testing.T) {
	at := time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)
	r := ledger.Record{ID: ledger.ID{Tenant: "t", Tool: "create_payment", Key: "order-7"}, State: ledger.StateRetryable, CreatedAt: at, UpdatedAt: at,
		Reconciled: &ledger.Resolution{Verdict: ledger.VerdictNotRun, Method: ledger.MethodProbe, At: at.Add(time.Minute)}}
	got := ledger.Explain(&r)
	for _, want := range []string{"found not to have taken effect", "reconciled by probe on 2030-03-04T05:07:07Z", "may be sent again under the same key"} {
		if !strings.Contains(got, want) {
			t.Errorf("Explain(RETRYABLE, reconciled not_run) = %q; want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "not delivered") {
		t.Errorf("Explain(RETRYABLE, reconciled not_run) = %q; it was delivered, found not run", got)
	}
	if m := ledger.Meaning(&r); !strings.Contains(m, "found not to have taken effect (probe)") {
		t.Errorf("Meaning(RETRYABLE, reconciled not_run) = %q; want it found not run by the probe", m)
	}
}

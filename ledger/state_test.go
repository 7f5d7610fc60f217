package ledger_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

// legal is the state diagram of DESIGN.md written out edge by edge, the
// claims left out (they are decided by Store.Claim, not Transition); every
// pair not listed here must be refused.
var legal = map[[2]ledger.State]bool{
	{ledger.StatePendingApproval, ledger.StateProcessing}: true, // approve
	{ledger.StatePendingApproval, ledger.StateDenied}:     true, // deny
	{ledger.StatePendingApproval, ledger.StateRejected}:   true, // no answer, approval expired, owner dead
	{ledger.StateProcessing, ledger.StateSucceeded}:       true, // ok
	{ledger.StateProcessing, ledger.StateFailed}:          true, // tool error
	{ledger.StateProcessing, ledger.StateRetryable}:       true, // not sent
	{ledger.StateProcessing, ledger.StateRejected}:        true, // refused before the tool ran
	{ledger.StateProcessing, ledger.StateDenied}:          true, // an upstream ledger said no
	{ledger.StateProcessing, ledger.StateUnknown}:         true, // ambiguous, lease expired, owner dead
	{ledger.StateUnknown, ledger.StateSucceeded}:          true, // reconcile, or the fenced late result
	{ledger.StateUnknown, ledger.StateFailed}:             true, // reconcile, or the fenced late result
	{ledger.StateUnknown, ledger.StateProcessing}:         true, // re-send to a key-aware server
	{ledger.StateUnknown, ledger.StateRetryable}:          true, // reconciled: provably not run
	{ledger.StateUnknown, ledger.StateUnknown}:            true, // reconciled without evidence: the attempt joins the history

	// A queued call a person approved waits, leased, for the call that runs it.
	{ledger.StatePendingApproval, ledger.StatePendingApproval}: true,
}

func TestCheckTransitionEveryPair(t *testing.T) {
	if len(ledger.States) != 8 {
		t.Fatalf("len(States) = %d; want 8", len(ledger.States))
	}
	for _, from := range ledger.States {
		for _, to := range ledger.States {
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				err := ledger.CheckTransition(from, to)
				if legal[[2]ledger.State{from, to}] {
					if err != nil {
						t.Fatalf("CheckTransition(%s, %s) = %v; want nil", from, to, err)
					}
					return
				}
				if !errors.Is(err, ledger.ErrIllegalTransition) {
					t.Fatalf("CheckTransition(%s, %s) = %v; want ErrIllegalTransition", from, to, err)
				}
			})
		}
	}
	t.Run("invalid states", func(t *testing.T) {
		for _, pair := range [][2]ledger.State{{"", ledger.StateProcessing}, {ledger.StateProcessing, ""}, {"DONE", ledger.StateSucceeded}} {
			if err := ledger.CheckTransition(pair[0], pair[1]); !errors.Is(err, ledger.ErrIllegalTransition) {
				t.Errorf("CheckTransition(%q, %q) = %v; want ErrIllegalTransition", pair[0], pair[1], err)
			}
		}
	})
}

func TestStatePredicates(t *testing.T) {
	cases := []struct {
		state                                       ledger.State
		valid, final, settled, waiting, reclaimable bool
	}{
		{ledger.StatePendingApproval, true, false, false, true, false},
		{ledger.StateProcessing, true, false, false, true, false},
		{ledger.StateSucceeded, true, true, true, false, false},
		{ledger.StateFailed, true, true, true, false, false},
		{ledger.StateRetryable, true, false, true, false, true},
		{ledger.StateRejected, true, false, true, false, true},
		{ledger.StateUnknown, true, false, false, false, false},
		{ledger.StateDenied, true, true, true, false, false},
		{"", false, false, false, false, false},
		{"succeeded", false, false, false, false, false},
		{"rejected", false, false, false, false, false},
	}
	seen := map[ledger.State]bool{}
	for _, tc := range cases {
		seen[tc.state] = true
		t.Run(string(tc.state), func(t *testing.T) {
			s := tc.state
			if got := s.Valid(); got != tc.valid {
				t.Errorf("%q.Valid() = %v; want %v", s, got, tc.valid)
			}
			if got := s.Final(); got != tc.final {
				t.Errorf("%q.Final() = %v; want %v", s, got, tc.final)
			}
			if got := s.Settled(); got != tc.settled {
				t.Errorf("%q.Settled() = %v; want %v", s, got, tc.settled)
			}
			if got := s.Waiting(); got != tc.waiting {
				t.Errorf("%q.Waiting() = %v; want %v", s, got, tc.waiting)
			}
			if got := s.Reclaimable(); got != tc.reclaimable {
				t.Errorf("%q.Reclaimable() = %v; want %v", s, got, tc.reclaimable)
			}
		})
	}
	for _, s := range ledger.States {
		if !seen[s] {
			t.Errorf("state %s has no case here", s)
		}
	}
}

func TestParseState(t *testing.T) {
	cases := []struct {
		in      string
		want    ledger.State
		wantErr bool
	}{
		{in: "SUCCEEDED", want: ledger.StateSucceeded},
		{in: "succeeded", want: ledger.StateSucceeded},
		{in: "Pending_Approval", want: ledger.StatePendingApproval},
		{in: "unknown", want: ledger.StateUnknown},
		{in: "retryable", want: ledger.StateRetryable},
		{in: "Rejected", want: ledger.StateRejected},
		{in: "", wantErr: true},
		{in: "SUCCEEDED ", wantErr: true},
		{in: "pending-approval", wantErr: true},
		{in: "DONE", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ledger.ParseState(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseState(%q) = %q, nil; want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseState(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	for _, s := range ledger.States {
		if got, err := ledger.ParseState(string(s)); err != nil || got != s {
			t.Errorf("ParseState(%q) = %q, %v; want it back", s, got, err)
		}
	}
}

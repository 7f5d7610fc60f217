package ledger_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Every state has one row, and the row agrees with what the state's own
// methods and the table say: a row that contradicts them would give one
// consumer another meaning than the next.
func TestRowsAgreeWithStates(t *testing.T) {
	rows := ledger.Rows()
	if len(rows) != len(ledger.States) {
		t.Fatalf("Rows() has %d rows; want one per state (%d)", len(rows), len(ledger.States))
	}
	for i, row := range rows {
		s := ledger.States[i]
		t.Run(string(s), func(t *testing.T) {
			if row.State != s {
				t.Fatalf("row %d is of %s; want %s", i, row.State, s)
			}
			if row.Final != s.Final() {
				t.Errorf("RowOf(%s).Final = %v; want State.Final() = %v", s, row.Final, s.Final())
			}
			if got := ledger.Act(&ledger.Record{State: s}); got != row.Act {
				t.Errorf("Act(%s) = %s; want the row's %s", s, got, row.Act)
			}
			if row.Outcome == "" || row.Ran == "" {
				t.Errorf("RowOf(%s) leaves Outcome %q or Ran %q empty", s, row.Outcome, row.Ran)
			}
			// A state the tool may have reached is never answered as if
			// nothing ran, and the other way round.
			switch row.Ran {
			case ledger.RanMaybe:
				if row.Exit != ledger.ExitUnknown {
					t.Errorf("RowOf(%s).Exit = %d; a call that may have run exits %d", s, row.Exit, ledger.ExitUnknown)
				}
				if row.Code != ledger.CodeOutcomeUnknown && row.Code != ledger.CodeInProgress {
					t.Errorf("RowOf(%s).Code = %d; want -31003 or -31002", s, row.Code)
				}
			case ledger.RanNo:
				if row.Code == ledger.CodeOutcomeUnknown || row.Exit == ledger.ExitUnknown || row.Exit == ledger.ExitOK {
					t.Errorf("RowOf(%s) answers %d / exit %d for a call that did not run", s, row.Code, row.Exit)
				}
			case ledger.RanYes:
				if row.Code != 0 {
					t.Errorf("RowOf(%s).Code = %d; the tool's answer is a result", s, row.Code)
				}
			}
			on, to := ledger.Upstream(s)
			if on != row.Upstream {
				t.Errorf("Upstream(%s) = %s; want the row's %s", s, on, row.Upstream)
			}
			// What an upstream's word makes of this caller's record never
			// claims more than the upstream knows.
			if got := ledger.RowOf(to).Ran; got != row.Ran && !(row.State == ledger.StatePendingApproval && to == ledger.StateRetryable) {
				t.Errorf("Upstream(%s) records %s, whose tool ran %q; the upstream said %q", s, to, got, row.Ran)
			}
			if (row.Waits != "") != s.Waiting() {
				t.Errorf("RowOf(%s).Waits = %q; want a wait exactly for the leased states (Waiting() = %v)", s, row.Waits, s.Waiting())
			}
			if row.Waits == ledger.WaitsTool && row.Ran != ledger.RanMaybe || row.Waits == ledger.WaitsPerson && row.Ran != ledger.RanNo {
				t.Errorf("RowOf(%s) waits for %q with ran %q; a call sent may have run, one waiting for a person has not", s, row.Waits, row.Ran)
			}
			// Only a call that ran and said yes is answered as a success.
			if success := row.Code == 0 && !row.IsError; success != (row.Ran == ledger.RanYes && row.Final && row.Exit == ledger.ExitOK) {
				t.Errorf("RowOf(%s): code %d, isError %v answers a success %v; want it exactly for a call that ran and exits 0", s, row.Code, row.IsError, success)
			}
			if (row.Again != "") != (row.Act == ledger.ActReclaim) {
				t.Errorf("RowOf(%s).Again = %q; want a text exactly for the states a caller makes again (act %s)", s, row.Again, row.Act)
			}
		})
	}
	// The verdict of a row is the finding that settles UNKNOWN in it, as
	// Resolve records it.
	for v, want := range map[ledger.Verdict]ledger.State{
		ledger.VerdictFound:   ledger.StateSucceeded,
		ledger.VerdictFailed:  ledger.StateFailed,
		ledger.VerdictNotRun:  ledger.StateRetryable,
		ledger.VerdictUnknown: ledger.StateUnknown,
	} {
		if got := ledger.RowOf(want).Verdict; got != v {
			t.Errorf("RowOf(%s).Verdict = %q; want %q", want, got, v)
		}
	}
	for _, r := range ledger.Rows() {
		if r.Verdict == "" {
			continue
		}
		if r.Ran == ledger.RanNo && r.Verdict != ledger.VerdictNotRun || r.Ran == ledger.RanYes && r.Verdict == ledger.VerdictNotRun {
			t.Errorf("RowOf(%s).Verdict = %s contradicts ran %q", r.State, r.Verdict, r.Ran)
		}
	}
	if got := ledger.RowOf("BOGUS").State; got != ledger.StateUnknown {
		t.Errorf("RowOf(BOGUS) is the row of %s; want UNKNOWN's", got)
	}
}

// Every state but SUCCEEDED gives agentctl a --json reason, and one
// reason never stands for two exit codes, so a script that branches on
// the reason and a shell that branches on the code agree.
func TestRowsExitReasons(t *testing.T) {
	exitOf := map[string]int{}
	check := func(what string, r ledger.Row) {
		t.Helper()
		if (r.ExitReason == "") != (r.Exit == ledger.ExitOK) {
			t.Errorf("%s: exit %d with reason %q; want a reason exactly for the exits that are errors", what, r.Exit, r.ExitReason)
		}
		if code, ok := exitOf[r.ExitReason]; ok && code != r.Exit {
			t.Errorf("%s: reason %s exits %d here and %d elsewhere", what, r.ExitReason, r.Exit, code)
		}
		exitOf[r.ExitReason] = r.Exit
	}
	for _, r := range ledger.Rows() {
		check("RowOf("+string(r.State)+")", r)
	}
	for _, tc := range []struct {
		state      ledger.State
		kind       string
		reason     string
		exit       int
		ran        string
		sameAsRow  bool
		whatItSays string
	}{
		{ledger.StateRejected, ledger.KindNoAnswer, ledger.ExitReasonUnconfirmed, ledger.ExitUsage, ledger.RanNo, false, "no one answered"},
		{ledger.StateRejected, ledger.KindApprovalExpired, ledger.ExitReasonUnconfirmed, ledger.ExitUsage, ledger.RanNo, false, "the approval expired"},
		{ledger.StateRejected, ledger.KindOwnerDead, ledger.ExitReasonUnconfirmed, ledger.ExitUsage, ledger.RanNo, false, "the asker died"},
		{ledger.StateRejected, ledger.KindRefused, ledger.ExitReasonRejected, ledger.ExitUsage, ledger.RanNo, true, "the server refused"},
		{ledger.StateRetryable, ledger.ReasonInProgress, ledger.ExitReasonInProgress, ledger.ExitUnknown, ledger.RanMaybe, false, "the server runs it"},
		{ledger.StateRetryable, ledger.UpstreamKind(ledger.StatePendingApproval), ledger.ExitReasonAwaiting, ledger.ExitAwaiting, ledger.RanNo, false, "a person must approve it upstream"},
		{ledger.StateRetryable, ledger.UpstreamKind(ledger.StateRetryable), ledger.ExitReasonNotSent, ledger.ExitUnreachable, ledger.RanNo, true, "not run upstream"},
		{ledger.StateRetryable, "not_sent", ledger.ExitReasonNotSent, ledger.ExitUnreachable, ledger.RanNo, true, "never sent"},
		{ledger.StateUnknown, ledger.KindNoAnswer, ledger.ExitReasonUnknown, ledger.ExitUnknown, ledger.RanMaybe, true, "a kind does not change UNKNOWN"},
		{ledger.StateProcessing, ledger.ReasonInProgress, ledger.ExitReasonInProgress, ledger.ExitUnknown, ledger.RanMaybe, true, "in progress"},
	} {
		r := ledger.RowFor(tc.state, tc.kind)
		if r.ExitReason != tc.reason || r.Exit != tc.exit || r.Ran != tc.ran || r.State != tc.state {
			t.Errorf("RowFor(%s, %s) (%s) = %s reason %s exit %d ran %s; want %s, %s, %d, %s",
				tc.state, tc.kind, tc.whatItSays, r.State, r.ExitReason, r.Exit, r.Ran, tc.state, tc.reason, tc.exit, tc.ran)
		}
		if same := r == ledger.RowOf(tc.state); same != tc.sameAsRow {
			t.Errorf("RowFor(%s, %s) == RowOf(%s) is %v; want %v", tc.state, tc.kind, tc.state, same, tc.sameAsRow)
		}
		check("RowFor("+string(tc.state)+", "+tc.kind+")", r)
	}
}

// Each state a call can fail in has its own error, read back to the state
// by StateOfError; an error that wraps two reads as the one that claims
// least about what ran.
func TestRowsErrors(t *testing.T) {
	for _, r := range ledger.Rows() {
		if (r.Err == nil) != (r.Ran == ledger.RanYes) {
			t.Errorf("RowOf(%s).Err = %v; want an error exactly for the states whose answer is not the tool's", r.State, r.Err)
		}
		if r.Err == nil {
			continue
		}
		if s, ok := ledger.StateOfError(fmt.Errorf("call: %w", r.Err)); !ok || s != r.State {
			t.Errorf("StateOfError(%v) = %s, %v; want %s", r.Err, s, ok, r.State)
		}
	}
	both := fmt.Errorf("%w after %w", ledger.ErrOutcomeUnknown, ledger.ErrInProgress)
	if s, _ := ledger.StateOfError(both); s != ledger.StateUnknown {
		t.Errorf("StateOfError(%v) = %s; want UNKNOWN", both, s)
	}
	if s, ok := ledger.StateOfError(errors.New("disk full")); ok {
		t.Errorf("StateOfError(disk full) = %s; want none", s)
	}
}

// A state's texts for a person (Meaning) and for a model (Explain) are its
// own: only UNKNOWN, and a word that is no state, read as an unknown
// outcome. A state added to the rows is never worded as UNKNOWN because a
// switch has no case for it.
func TestTextsAreTheStatesOwn(t *testing.T) {
	unknown := ledger.RowOf(ledger.StateUnknown).Means
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, s := range append(append([]ledger.State(nil), ledger.States...), "BOGUS") {
		r := &ledger.Record{ID: ledger.ID{Tool: "create_payment", Key: "k-1"}, State: s, CreatedAt: at, UpdatedAt: at}
		want := s == ledger.StateUnknown || !s.Valid()
		if got := ledger.Meaning(r); (got == unknown) != want {
			t.Errorf("Meaning(%s) = %q; unknown's text: %v, want %v", s, got, got == unknown, want)
		}
		if got := ledger.Explain(r); strings.Contains(got, "outcome is unknown") != want {
			t.Errorf("Explain(%s) = %q; want the words \"outcome is unknown\": %v", s, got, want)
		}
	}
}

package ledger_test

import (
	"testing"

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
		})
	}
	if got := ledger.RowOf("BOGUS").State; got != ledger.StateUnknown {
		t.Errorf("RowOf(BOGUS) is the row of %s; want UNKNOWN's", got)
	}
}

package caller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

// A failed call's error tells the state it left the record in, and StateOf
// reads that state back from it: one table, both ways.
func TestFailedAndStateOfAgree(t *testing.T) {
	cause := errors.New("connection reset")
	for _, tc := range []struct {
		on   ledger.Trigger
		want error
		st   ledger.State
	}{
		{ledger.OnAmbiguous, ErrOutcomeUnknown, ledger.StateUnknown},
		{ledger.OnLeaseExpired, ErrOutcomeUnknown, ledger.StateUnknown},
		{ledger.OnNotSent, ErrNotSent, ledger.StateRetryable},
		{ledger.OnDeny, ErrDenied, ledger.StateDenied},
		{ledger.OnRefused, ErrRejected, ledger.StateRejected},
	} {
		err := Failed(ledger.Report{On: tc.on}, cause)
		if !errors.Is(err, tc.want) || !errors.Is(err, cause) {
			t.Errorf("Failed(%s) = %v; want %v wrapping %v", tc.on, err, tc.want, cause)
		}
		if st, ok := StateOf(err); !ok || st != tc.st {
			t.Errorf("StateOf(Failed(%s)) = %s, %v; want %s", tc.on, st, ok, tc.st)
		}
	}
	for _, s := range ledger.States {
		e := ledger.RowOf(s).Err
		if e == nil {
			continue
		}
		if st, named := StateOf(fmt.Errorf("call: %w", e)); !named || st != s {
			t.Errorf("StateOf(%v) = %s, %v; want %s", e, st, named, s)
		}
	}
}

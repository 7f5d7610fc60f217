package caller

import (
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

var (
	// ErrOutcomeUnknown: the call may or may not have taken effect. The
	// record is UNKNOWN and must be reconciled; it is never re-run blindly.
	ErrOutcomeUnknown = errors.New("client: outcome unknown")
	// ErrDenied: a person or the policy refused the call; nothing ran.
	ErrDenied = errors.New("client: call denied")
	// ErrRejected: nothing ran and nothing will: the server refused the
	// request before the tool ran (invalid arguments, a key it will not
	// take), or no one confirmed the call. The record is REJECTED and the
	// same key may be used again, with corrected arguments or an answer.
	ErrRejected = errors.New("client: call rejected before it ran")
	// ErrNotSent: the request provably never reached the tool: retries ran
	// out (the record is RETRYABLE), or the ledger could not record the
	// claim (there may be no record). The same call may be repeated.
	ErrNotSent = errors.New("client: request not sent")
	// ErrArgumentsTooLarge: the arguments exceed Options.MaxArguments.
	ErrArgumentsTooLarge = errors.New("client: arguments too large")
)

// Error is a call that did not complete, with the key of its record and a
// short text a model can read (what happened, when, and what to do next).
type Error struct {
	Tool  string
	Key   string
	State ledger.State
	// Text is model-facing: it says not to re-issue the call and that
	// ledger_status can be asked with the key.
	Text string
	Err  error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%v (tool %s, key %s", e.Err, e.Tool, e.Key)
	if e.State != "" {
		msg += ", state " + string(e.State)
	}
	return msg + ")"
}

func (e *Error) Unwrap() error { return e.Err }

// sentinels is the one table of the states a failed call can stand in
// and the sentinel error each is told by, in the order StateOf tests
// them. Failed reads it one way, StateOf the other.
var sentinels = []struct {
	state ledger.State
	err   error
}{
	{ledger.StateUnknown, ErrOutcomeUnknown},
	{ledger.StatePendingApproval, ErrAwaitingApproval},
	{ledger.StateDenied, ErrDenied},
	{ledger.StateRejected, ErrRejected},
	{ledger.StateRetryable, ErrNotSent},
	{ledger.StateProcessing, ledger.ErrInProgress},
}

// sentinel is the error a call that failed in state s is told by
// (errors.Is): ErrOutcomeUnknown for UNKNOWN, ErrNotSent for RETRYABLE,
// ErrDenied, ErrRejected, ErrAwaitingApproval for PENDING_APPROVAL,
// ledger.ErrInProgress for PROCESSING. ok is false for the states a
// failed call never stands in (SUCCEEDED, FAILED).
func sentinel(s ledger.State) (err error, ok bool) {
	for _, e := range sentinels {
		if e.state == s {
			return e.err, true
		}
	}
	return nil, false
}

// Failed is the error of a call that failed with err and was recorded
// with rep (retry.Failure of err): the sentinel of the state it left the
// record in (ErrOutcomeUnknown when UNKNOWN, ErrNotSent when RETRYABLE,
// ErrDenied when DENIED: an upstream ledger said no), else ErrRejected,
// with ledger.ErrKeyReused when the server said the key was reused. Every
// client adapter answers with it, whatever its SDK.
func Failed(rep ledger.Report, err error) error {
	to, _ := ledger.Next(ledger.StateProcessing, rep.On)
	if s, ok := sentinel(to); ok && s != ErrRejected {
		return fmt.Errorf("%w: %w", s, err)
	}
	if retry.Reason(err) == wire.ReasonKeyReused {
		return fmt.Errorf("%w: %w: %w", ErrRejected, ledger.ErrKeyReused, err)
	}
	return fmt.Errorf("%w: %w", ErrRejected, err)
}

// StateOf is the state a call that failed with err stands in, as far as
// anyone asked about it can tell: the state of the sentinel err wraps
// (UNKNOWN: it may have run; RETRYABLE: nothing was sent; DENIED,
// REJECTED, PENDING_APPROVAL, or PROCESSING: another caller still runs
// it), else the state of the *Error it wraps. ok is false for an error
// that names no state (a bad request refused before the ledger was asked,
// or a key reused with other arguments). Every adapter answers a failed
// call by the row of this state (ledger.RowOf).
func StateOf(err error) (s ledger.State, ok bool) {
	if err == nil || errors.Is(err, ledger.ErrKeyReused) {
		return "", false
	}
	for _, e := range sentinels {
		if errors.Is(err, e.err) {
			return e.state, true
		}
	}
	if e, ok := errors.AsType[*Error](err); ok && e.State.Valid() {
		return e.State, true
	}
	return "", false
}

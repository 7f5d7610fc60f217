package caller

import (
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
)

// The errors a call that did not complete is told by: the ledger's, one
// per state (ledger.Row.Err), kept here under the names callers know.
var (
	// ErrOutcomeUnknown: the call may or may not have taken effect. The
	// record is UNKNOWN and must be reconciled; it is never re-run blindly.
	ErrOutcomeUnknown = ledger.ErrOutcomeUnknown
	// ErrDenied: a person or the policy refused the call; nothing ran.
	ErrDenied = ledger.ErrDenied
	// ErrRejected: nothing ran and nothing will: the server refused the
	// request before the tool ran (invalid arguments, a key it will not
	// take), or no one confirmed the call. The record is REJECTED and the
	// same key may be used again, with corrected arguments or an answer.
	ErrRejected = ledger.ErrRejected
	// ErrNotSent: the request provably never reached the tool: retries ran
	// out (the record is RETRYABLE), or the ledger could not record the
	// claim (there may be no record). The same call may be repeated.
	ErrNotSent = ledger.ErrNotSent
	// ErrArgumentsTooLarge: the arguments exceed Options.MaxArguments.
	ErrArgumentsTooLarge = errors.New("caller: arguments too large")
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

// Failed is the error of a call that failed with err and was recorded
// with rep (retry.Failure of err): the sentinel of the state it left the
// record in (ErrOutcomeUnknown when UNKNOWN, ErrNotSent when RETRYABLE,
// ErrDenied when DENIED: an upstream ledger said no), else ErrRejected,
// with ledger.ErrKeyReused when the server said the key was reused. Every
// client adapter answers with it, whatever its SDK.
func Failed(rep ledger.Report, err error) error {
	if to, nerr := ledger.Next(ledger.StateProcessing, rep.On); nerr == nil {
		if s := ledger.RowOf(to).Err; s != nil && s != ErrRejected {
			return fmt.Errorf("%w: %w", s, err)
		}
	}
	if retry.Reason(err) == ledger.ReasonKeyReused {
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
	if s, ok := ledger.StateOfError(err); ok {
		return s, true
	}
	if e, ok := errs.AsType[*Error](err); ok && e.State.Valid() {
		return e.State, true
	}
	return "", false
}

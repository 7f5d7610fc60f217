package ledger

import "fmt"

// State is where an operation stands. The zero value is not a valid state.
type State string

// The seven states of DESIGN.md.
const (
	// StatePendingApproval: claimed, waiting for a person to approve or deny.
	StatePendingApproval State = "PENDING_APPROVAL"
	// StateProcessing: an owner holds a lease and may be executing the call.
	StateProcessing State = "PROCESSING"
	// StateSucceeded: the tool ran and returned a result (final; result kept).
	StateSucceeded State = "SUCCEEDED"
	// StateFailed: the tool ran and said no (isError), or the request was
	// rejected deterministically (final; result kept).
	StateFailed State = "FAILED"
	// StateRetryable: the request provably never reached the tool; the next
	// Claim of the same identity takes it over.
	StateRetryable State = "RETRYABLE"
	// StateUnknown: the call may or may not have taken effect; a person or a
	// re-send to a key-aware server must reconcile it.
	StateUnknown State = "UNKNOWN"
	// StateDenied: a person or policy refused the call (final).
	StateDenied State = "DENIED"
)

// States lists every state in a stable order.
var States = []State{
	StatePendingApproval, StateProcessing, StateSucceeded, StateFailed,
	StateRetryable, StateUnknown, StateDenied,
}

// transitions is the one table every Store consults. A transition not listed
// here is refused with ErrIllegalTransition before any storage is touched.
var transitions = map[State][]State{
	StatePendingApproval: {StateProcessing, StateDenied},
	StateProcessing:      {StateSucceeded, StateFailed, StateRetryable, StateUnknown},
	StateRetryable:       {StateProcessing},
	// UNKNOWN is reconciled: a person decides (SUCCEEDED or FAILED), or the
	// call is re-sent to a key-aware server under a fresh lease (PROCESSING).
	StateUnknown: {StateSucceeded, StateFailed, StateProcessing},
}

// Valid reports whether s is one of the seven states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Final reports whether no transition leaves s.
func (s State) Final() bool {
	return s.Valid() && len(transitions[s]) == 0
}

// Settled reports whether s needs no owner and no person: a record in a
// settled state may be purged once its retention ends. UNKNOWN is not
// settled; it waits for reconciliation.
func (s State) Settled() bool {
	return s.Final() || s == StateRetryable
}

// Waiting reports whether followers of a record in s should wait for it to
// change (an execution or an approval is under way).
func (s State) Waiting() bool {
	return s == StateProcessing || s == StatePendingApproval
}

// ParseState parses a state name, case-insensitively.
func ParseState(name string) (State, error) {
	for _, s := range States {
		if equalFoldASCII(string(s), name) {
			return s, nil
		}
	}
	return "", fmt.Errorf("ledger: unknown state %q (want one of %v)", name, States)
}

// CheckTransition returns nil when from -> to is legal and an error wrapping
// ErrIllegalTransition otherwise.
func CheckTransition(from, to State) error {
	for _, t := range transitions[from] {
		if t == to {
			return nil
		}
	}
	return fmt.Errorf("%w: %s -> %s", ErrIllegalTransition, from, to)
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

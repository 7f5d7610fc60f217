package ledger

import "fmt"

// State is where an operation stands. The zero value is not a valid state.
type State string

// The eight states of DESIGN.md. table.go says how they connect.
const (
	// StatePendingApproval: claimed and leased by an owner that is asking a
	// person (or waiting for one) to approve or deny.
	StatePendingApproval State = "PENDING_APPROVAL"
	// StateProcessing: an owner holds a fenced lease and may be executing
	// the call.
	StateProcessing State = "PROCESSING"
	// StateSucceeded: the tool ran and returned a result (final; result kept).
	StateSucceeded State = "SUCCEEDED"
	// StateFailed: the tool ran and said no (isError) (final; result kept).
	StateFailed State = "FAILED"
	// StateRetryable: the request provably never reached the tool; the next
	// Claim with the same arguments takes it over.
	StateRetryable State = "RETRYABLE"
	// StateRejected: nothing ran and nothing will: the arguments were
	// refused before the tool ran, or no one answered the confirmation. The
	// key may be claimed again, with any arguments.
	StateRejected State = "REJECTED"
	// StateUnknown: the call may or may not have taken effect; a person or a
	// re-send to a key-aware server must reconcile it.
	StateUnknown State = "UNKNOWN"
	// StateDenied: a person or the policy said no (final).
	StateDenied State = "DENIED"
)

// States lists every state in a stable order.
var States = []State{
	StatePendingApproval, StateProcessing, StateSucceeded, StateFailed,
	StateRetryable, StateRejected, StateUnknown, StateDenied,
}

// Valid reports whether s is one of the eight states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Final reports whether s is an outcome that is replayed as it is and never
// changes: SUCCEEDED, FAILED and DENIED.
func (s State) Final() bool {
	return s == StateSucceeded || s == StateFailed || s == StateDenied
}

// Settled reports whether s needs no owner and no person: a record in a
// settled state may be purged once its retention ends. UNKNOWN is not
// settled; it waits for reconciliation.
func (s State) Settled() bool {
	return s.Final() || s == StateRetryable || s == StateRejected
}

// Waiting reports whether s is leased: an owner is working on the record
// (executing it, or asking a person), and followers wait for it to change.
func (s State) Waiting() bool {
	return s == StateProcessing || s == StatePendingApproval
}

// Reclaimable reports whether the next Claim of the key takes the record
// over as a new attempt: RETRYABLE (with the same arguments) and REJECTED
// (with any arguments).
func (s State) Reclaimable() bool {
	return s == StateRetryable || s == StateRejected
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

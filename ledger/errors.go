package ledger

import "errors"

// Errors callers branch on with errors.Is. Stores wrap them with detail.
var (
	// ErrKeyReused: the key is already bound to other arguments (another
	// fingerprint). Nothing was executed and the stored record is untouched.
	ErrKeyReused = errors.New("ledger: idempotency key reused with different arguments")
	// ErrInProgress: another caller holds the operation and it did not finish
	// within the caller's bound.
	ErrInProgress = errors.New("ledger: operation in progress")
	// ErrNotFound: no record has this identity.
	ErrNotFound = errors.New("ledger: record not found")
	// ErrInvalidKey: the key breaks the key rules (1-255 bytes of
	// [A-Za-z0-9._:~-]).
	ErrInvalidKey = errors.New("ledger: invalid idempotency key")
	// ErrInvalidTenant: the tenant breaks the same rules as keys.
	ErrInvalidTenant = errors.New("ledger: invalid tenant")
	// ErrInvalidLayer: the layer breaks the same rules as keys.
	ErrInvalidLayer = errors.New("ledger: invalid layer")
	// ErrIllegalTransition: the state machine has no such edge.
	ErrIllegalTransition = errors.New("ledger: illegal state transition")
	// ErrStateChanged: the record is no longer in the state the caller
	// expected (a compare-and-set lost to another writer).
	ErrStateChanged = errors.New("ledger: record state changed")
	// ErrLeaseLost: the caller no longer owns the PROCESSING lease (another
	// owner took it, or expiry turned the record UNKNOWN).
	ErrLeaseLost = errors.New("ledger: lease lost")
	// ErrNotRun is what a tool handler returns (wrapped) when it knows that
	// nothing happened: its transaction rolled back, its database was busy,
	// it was cancelled before it acted. The server middleware of every SDK
	// records it RETRYABLE and tells the client to send the same key again.
	ErrNotRun = errors.New("ledger: nothing happened")
)

package sqlite

import (
	"fmt"
	"time"
)

// BusyError is a statement that found the ledger locked by another
// connection (of this or another process) for longer than the busy
// timeout. It matches ErrBusy with errors.Is; nothing was written.
type BusyError struct {
	Path string
	// Timeout is the busy timeout each statement waits for the lock
	// (Options.BusyTimeout); an operation of several statements may wait
	// longer in all.
	Timeout time.Duration
	err     error
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("sqlite: %s is locked by another connection (a statement waited the busy timeout of %v): %v", e.Path, e.Timeout, e.err)
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

func (e *BusyError) Unwrap() error { return e.err }

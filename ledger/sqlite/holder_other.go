//go:build !unix

package sqlite

import "errors"

// LockHolder returns the process id of the process that holds the write
// lock of the ledger at path; this platform cannot tell, so it returns
// errors.ErrUnsupported.
func LockHolder(path string) (int, error) {
	return 0, errors.ErrUnsupported
}

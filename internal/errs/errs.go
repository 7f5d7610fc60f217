// Package errs holds the generic error helpers the module would take from
// the standard library of a newer Go than the one it asks for (go 1.25).
package errs

import "errors"

// AsType finds the first error in err's tree that is a T and returns it:
// errors.AsType of Go 1.26, for builds on Go 1.25.
func AsType[T error](err error) (T, bool) {
	var t T
	ok := errors.As(err, &t)
	return t, ok
}

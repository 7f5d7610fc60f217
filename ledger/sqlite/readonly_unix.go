//go:build unix

package sqlite

import "golang.org/x/sys/unix"

// writable reports whether this process may write path (a file, or a
// folder to create files in): access(2) answers for the process's own
// privileges and for a read-only mount, where a mode alone would not.
func writable(path string) bool { return unix.Access(path, unix.W_OK) == nil }

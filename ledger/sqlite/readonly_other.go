//go:build !unix

package sqlite

// writable reports whether path may be written. This system has no
// access(2) to ask: SQLite tries, and its error says what failed.
func writable(string) bool { return true }

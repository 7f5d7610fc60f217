//go:build !cgo

package sqlite

// trimCHeap does nothing: without cgo SQLite runs as Go code, and its
// memory is the Go collector's to return.
func trimCHeap() {}

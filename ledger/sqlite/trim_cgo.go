//go:build cgo

package sqlite

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

// trim_c_heap hands the C heap's free pages back to the system. glibc
// keeps what free() returns in its per-thread arenas, and the threads
// that ran SQLite for a burst of calls each have one; other C libraries
// return memory on their own terms and have no such call.
static void trim_c_heap(void) {
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}
*/
import "C"

// trimCHeap returns the C heap's free pages (SQLite's freed caches among
// them) to the operating system, where the C library allows it.
func trimCHeap() { C.trim_c_heap() }

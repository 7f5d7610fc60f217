package gctest_test

import (
	"testing"
	"time"
	"weak"

	"github.com/mcpledger/mcpledger/internal/gctest"
)

// Kept counts what is still reachable, and nothing else.
func TestKept(t *testing.T) {
	held := make([]*[1024]byte, 3)
	ps := make([]weak.Pointer[[1024]byte], 5)
	for i := range ps {
		b := new([1024]byte)
		ps[i] = weak.Make(b)
		if i < len(held) {
			held[i] = b
		}
	}
	if got := gctest.Kept(50*time.Millisecond, ps); got != len(held) {
		t.Errorf("Kept = %d with %d of %d held; want %d", got, len(held), len(ps), len(held))
	}
	clear(held)
	if got := gctest.Kept(time.Second, ps); got != 0 {
		t.Errorf("Kept = %d once none is held; want 0", got)
	}
}

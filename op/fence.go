package op

import (
	"sync"

	"github.com/mcpledger/mcpledger/ledger"
)

// maxFences bounds the fencing tokens a FenceBook remembers. Past it the
// book starts over: a forgotten token only means a stale request is
// answered from the key's record instead of being refused outright.
const maxFences = 1 << 16

// FenceBook remembers the highest fencing token a server saw per key. The
// zero value is ready to use; it is safe for concurrent use.
type FenceBook struct {
	mu sync.Mutex // guards m
	m  map[ledger.ID]int64
}

// See records fence for id and returns the highest token seen for it.
func (b *FenceBook) See(id ledger.ID, fence int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxFences {
		b.m = make(map[ledger.ID]int64)
	}
	if seen := b.m[id]; seen > fence {
		return seen
	}
	b.m[id] = fence
	return fence
}

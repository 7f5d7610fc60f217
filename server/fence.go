package server

import (
	"sync"

	"github.com/mcpledger/mcpledger/ledger"
)

// maxFences bounds the fencing tokens a Guard remembers. Past it the book
// starts over: a forgotten token only means a stale request is answered
// from the key's record instead of being refused outright.
const maxFences = 1 << 16

// fenceBook remembers the highest fencing token seen per key. The zero
// value is ready to use.
type fenceBook struct {
	mu sync.Mutex // guards m
	m  map[ledger.ID]int64
}

// see records fence for id and returns the highest token seen for it.
func (b *fenceBook) see(id ledger.ID, fence int64) int64 {
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

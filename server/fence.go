package server

import (
	"sync"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// maxFences bounds the fencing tokens a Guard remembers. Past it the book
// starts over: a forgotten token only means a stale request is answered
// from the key's record instead of being refused outright.
const maxFences = 1 << 16

// fenceBook remembers the newest fencing token seen per key. The zero
// value is ready to use.
type fenceBook struct {
	mu sync.Mutex // guards m
	m  map[ledger.ID]wire.Fence
}

// see records f for id unless it is stale, and returns the newest token
// seen for the key: f itself, or the one that makes f stale. A token of
// another scope (another client ledger using the same key) replaces the
// one of the earlier scope; tokens of different scopes do not compare.
func (b *fenceBook) see(id ledger.ID, f wire.Fence) wire.Fence {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxFences {
		b.m = make(map[ledger.ID]wire.Fence)
	}
	if seen, ok := b.m[id]; ok && f.Stale(seen) {
		return seen
	}
	b.m[id] = f
	return f
}

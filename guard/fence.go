package guard

import (
	"sync"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// maxFences bounds the fencing tokens a FenceBook remembers. Past it the
// book starts over: a forgotten token only means a stale request is
// answered from the key's record instead of being refused outright.
const maxFences = 1 << 16

// FenceBook remembers the newest fencing token a server saw per key. The
// zero value is ready to use; it is safe for concurrent use.
type FenceBook struct {
	mu sync.Mutex // guards m
	m  map[ledger.ID]wire.Fence
}

// See records f for id unless it is stale, and returns the newest token
// seen for the key: f itself, or the one that makes f stale. A token of
// another scope (another client ledger using the same key) replaces the
// one of the earlier scope; tokens of different scopes do not compare.
func (b *FenceBook) See(id ledger.ID, f wire.Fence) wire.Fence {
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

// Check records f for id and returns the refusal of a stale token, or nil.
func (b *FenceBook) Check(id ledger.ID, f wire.Fence) *Refusal {
	if f.Token <= 0 {
		return nil
	}
	if seen := b.See(id, f); f.Stale(seen) {
		return StaleFence(id.Tool, id.Key, f.Token, seen.Token)
	}
	return nil
}

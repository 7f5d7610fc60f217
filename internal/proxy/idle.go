package proxy

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// DefaultIdleRelease is how long a proxy goes without a host request
// before it gives back the memory of the burst that came before.
const DefaultIdleRelease = 5 * time.Second

// releaser hands the memory a burst of requests left behind back to the
// operating system once requests have stopped for Options.IdleRelease.
// Go's collector runs as the program allocates (or every two minutes),
// and an idle proxy allocates nothing: after serving 200 host sessions it
// kept over 100 MB resident, as garbage, for minutes. One forced
// collection at the end of each burst costs nothing while requests flow.
// The finished records remembered for repeats are forgotten then too: a
// repeat after the pause reads the ledger.
func (p *Proxy) releaser(ctx context.Context) {
	defer close(p.released)
	wait := p.opts.IdleWait
	if wait == nil {
		every := p.opts.IdleRelease
		if every == 0 {
			every = DefaultIdleRelease
		}
		if every < 0 {
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		wait = func(ctx context.Context) bool {
			select {
			case <-ctx.Done():
				return false
			case <-t.C:
				return true
			}
		}
	}
	release := p.opts.Release
	if release == nil {
		release = func() {
			p.releaseStore(ctx)
			freeMemory()
		}
	}
	var seen uint64
	busy := false
	for wait(ctx) {
		if n := p.requests.Load(); n != seen {
			seen, busy = n, true
			continue
		}
		if busy {
			busy = false
			// The records remembered for repeats go first: what they
			// hold is then garbage the release returns.
			p.finals.Forget()
			release()
		}
	}
}

// releaseStore has the ledger give back what it keeps only while busy
// (ledger.MemoryReleaser: the SQLite store's page caches and idle read
// connections, C memory the collector never sees). A failure costs only
// memory, so it is logged and the proxy goes on.
func (p *Proxy) releaseStore(ctx context.Context) {
	r, ok := ledger.Unwrap(p.opts.Store).(ledger.MemoryReleaser)
	if !ok {
		return
	}
	if err := r.ReleaseMemory(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("the ledger kept its caches after the burst; the proxy goes on (memory only)", "err", err)
	}
}

// freeMemory closes the idle connections to the upstream, which an idle
// proxy does not need (the next burst dials again), and returns what they
// and the burst's garbage held to the operating system.
func freeMemory() {
	if t, ok := UpstreamTransport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	// Twice: the first collection moves what sync.Pools hold (net/http's
	// connection buffers among them) to their victim caches, and only the
	// second frees it.
	debug.FreeOSMemory()
	debug.FreeOSMemory()
}

package guard

import (
	"context"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Run sweeps the ledger every Options.SweepEvery until ctx ends: records
// whose PROCESSING lease ended (their server died mid-handler) become
// UNKNOWN, and settled records past their retention are purged. It returns
// ctx's error. Run it once per process, beside the server:
//
//	go g.Run(ctx)
//
// Duplicates also expire a dead lease they run into, so Run is what bounds
// how long an abandoned record sits in PROCESSING when nobody asks for it.
func (g *Guard) Run(ctx context.Context) error {
	t := time.NewTicker(g.opts.SweepEvery)
	defer t.Stop()
	for {
		g.Sweep(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Sweep runs one pass of Run and reports how many records it expired and
// purged: at most Options.SweepLimit, the rest at the next pass. Errors
// are logged, not returned: the next pass tries again.
func (g *Guard) Sweep(ctx context.Context) (expired, purged int) {
	n, err := g.store.ExpireLeases(ctx)
	if err != nil && ctx.Err() == nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: expiring leases", "err", err)
	}
	g.tel.EnteredUnknown(ctx, "", ledger.KindLeaseExpired, n)
	if n > 0 {
		g.opts.Logger.WarnContext(ctx, "mcpledger server: leases ended mid-handler; records are UNKNOWN until reconciled", "count", n)
	}
	p, err := g.store.Purge(ctx, ledger.PurgeRequest{ExpiredBy: g.opts.Now(), Limit: g.opts.SweepLimit})
	if err != nil && ctx.Err() == nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: purging", "err", err)
	}
	if p >= g.opts.SweepLimit {
		g.opts.Logger.WarnContext(ctx, "mcpledger server: more records past retention than one sweep purges; the rest go at the next sweeps (raise Options.SweepLimit or sweep more often)", "purged", p)
	}
	return n, p
}

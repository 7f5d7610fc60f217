package guard

import (
	"context"
	"errors"
	"slices"
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
	g.ReconcileDue(ctx)
	return n, p
}

// ReconcileDue puts the UNKNOWN records of this Guard's layer and of the
// tools with a reconciler that are due for an attempt (ledger.DueUnknown,
// the earliest due first, at most Options.SweepLimit) to their tool's
// reconciler, and reports how many it
// settled. A record whose reconciler finds nothing stays UNKNOWN and comes
// due again later (ledger.ReconcileDelay). Without reconcilers, or on a
// store that cannot list due records, it does nothing. Sweep calls it.
func (g *Guard) ReconcileDue(ctx context.Context) (settled int) {
	if len(g.reconciled) == 0 {
		return 0
	}
	recs, err := g.due(ctx)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, ledger.ErrNoDueList) {
			g.opts.Logger.ErrorContext(ctx, "mcpledger server: listing UNKNOWN records due for reconciliation", "err", err)
		}
		return 0
	}
	for _, rec := range recs {
		if ctx.Err() != nil {
			break
		}
		out, ok := g.resolve(ctx, rec, rec.Arguments)
		if ok && ledger.Act(out) != ledger.ActReconcile {
			settled++
		}
	}
	if settled > 0 {
		g.opts.Logger.InfoContext(ctx, "mcpledger server: reconciled UNKNOWN records in the background", "count", settled)
	}
	return settled
}

// due lists the UNKNOWN records of this Guard's layer due for an attempt,
// of the tools with a reconciler only: UNKNOWN records of the others wait
// for a person, and must not fill the list. At most Options.SweepLimit,
// over as many queries as ledger.MaxDueTools takes.
func (g *Guard) due(ctx context.Context) ([]*ledger.Record, error) {
	limit := min(g.opts.SweepLimit, ledger.MaxDueLimit)
	var out []*ledger.Record
	for tools := range slices.Chunk(g.reconciled, ledger.MaxDueTools) {
		if len(out) >= limit {
			break
		}
		recs, err := ledger.DueUnknown(ctx, g.store, ledger.DueQuery{AllTenants: true, Layers: []string{g.opts.Layer},
			Tools: tools, Limit: limit - len(out)})
		if err != nil {
			return out, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

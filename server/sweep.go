package server

import "context"

// Run sweeps the ledger every Options.SweepEvery until ctx ends: records
// whose PROCESSING lease ended (their server died mid-handler) become
// UNKNOWN, and settled records past their retention are purged. It returns
// ctx's error. Run it once per process, beside the server:
//
//	go g.Run(ctx)
//
// Duplicates also expire a dead lease they run into, so Run is what bounds
// how long an abandoned record sits in PROCESSING when nobody asks for it.
func (g *Guard) Run(ctx context.Context) error { return g.core.Run(ctx) }

// Sweep runs one pass of Run and reports how many records it expired and
// purged: at most Options.SweepLimit, the rest at the next pass. Errors
// are logged, not returned: the next pass tries again.
func (g *Guard) Sweep(ctx context.Context) (expired, purged int) { return g.core.Sweep(ctx) }

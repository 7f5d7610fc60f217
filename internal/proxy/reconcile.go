package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
)

// This file is the proxy's background reconciliation (DESIGN.md,
// "Reconciliation"): the UNKNOWN records of its own layer and tenant whose
// tool has a probe in the policy are put to that probe, so that an
// UNKNOWN call settles even when no one calls its key again. A call that
// meets its UNKNOWN record probes inline; this is for the others.

// Defaults of the proxy's background reconciliation.
const (
	// DefaultReconcileEvery is the period of the passes: the first step of
	// the per-record backoff (ledger.ReconcileBackoff), so that a record
	// is tried again about when it comes due.
	DefaultReconcileEvery = ledger.ReconcileBackoff
	// DefaultReconcileLimit bounds the records one pass probes: each
	// probe is a round trip to the upstream, bounded by the client's
	// ProbeBudget.
	DefaultReconcileLimit = 20
)

// reconcileSession is the ledger session of the proxy's own upstream
// session, on which its background probes go.
const reconcileSession = "proxy-reconcile"

// reconciler runs ReconcileDue every Options.ReconcileEvery (or as
// Options.ReconcileWait says) until ctx ends.
func (p *Proxy) reconciler(ctx context.Context) {
	defer close(p.reconciled)
	wait := p.opts.ReconcileWait
	if wait == nil {
		every := p.opts.ReconcileEvery
		if every == 0 {
			every = DefaultReconcileEvery
		}
		if every < 0 || len(p.opts.Policy.Reconcile) == 0 {
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
	for wait(ctx) {
		p.ReconcileDue(ctx)
	}
}

// ReconcileDue runs one pass of the proxy's background reconciliation: it
// lists the UNKNOWN records of the proxy's tenant and layer that are due
// for an attempt (ledger.DueUnknown, the earliest due first, at most
// Options.ReconcileLimit), of the upstream's tools the policy names a
// probe for, and asks each its probe (client.Client.Reconcile), on an
// upstream session of the proxy's own. A probe that finds the call
// settles it as SUCCEEDED with the probe's answer; an absent answer is
// believed only after the probe's quiet period (not_run: RETRYABLE, and
// the next call with the key runs it); anything else leaves the record
// UNKNOWN and due again later (ledger.ReconcileDelay). It returns how many
// records it settled. Errors are logged: the next pass tries again.
func (p *Proxy) ReconcileDue(ctx context.Context) (settled int) {
	p.passMu.Lock()
	defer p.passMu.Unlock()
	tools := p.probedTools()
	if len(tools) == 0 {
		return 0
	}
	limit := p.opts.ReconcileLimit
	if limit <= 0 {
		limit = DefaultReconcileLimit
	}
	limit = min(limit, ledger.MaxDueLimit)
	var recs []*ledger.Record
	for chunk := range slices.Chunk(tools, ledger.MaxDueTools) {
		if len(recs) >= limit {
			break
		}
		got, err := ledger.DueUnknown(ctx, p.opts.Store, ledger.DueQuery{Tenant: p.opts.Tenant,
			Layers: []string{ledger.LayerProxy}, Tools: chunk, Limit: limit - len(recs)})
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, ledger.ErrNoDueList) {
				p.log.Warn("listing the UNKNOWN records due for reconciliation failed; the next pass tries again", "err", err)
			}
			return 0
		}
		recs = append(recs, got...)
	}
	if len(recs) == 0 {
		return 0
	}
	c, err := p.reconcileClient(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("connecting to the upstream to reconcile UNKNOWN records failed; the next pass tries again", "due", len(recs), "err", err)
		}
		return 0
	}
	for _, rec := range recs {
		if ctx.Err() != nil {
			break
		}
		after, err := c.Reconcile(ctx, rec, nil)
		switch {
		case err == nil && ledger.RowOf(after.State).Act != ledger.ActReconcile:
			settled++
			p.log.Info("reconciled an UNKNOWN call by its probe", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "state", after.State)
		case err == nil, errors.Is(err, ledger.ErrStateChanged), errors.Is(err, ledger.ErrLeaseLost), errors.Is(err, client.ErrNoProbe):
			// Still UNKNOWN (the attempt is in its history), or settled by
			// someone else first.
		default:
			if ctx.Err() == nil {
				p.log.Warn("recording a probe's finding failed; the record stays UNKNOWN", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "err", err)
			}
		}
	}
	return settled
}

// probedTools are the upstream's tools the policy names a probe for,
// sorted.
func (p *Proxy) probedTools() []string {
	if len(p.opts.Policy.Reconcile) == 0 {
		return nil
	}
	p.toolsMu.Lock()
	defer p.toolsMu.Unlock()
	var out []string
	for _, t := range p.tools {
		if p.opts.Policy.ProbeFor(t) != nil {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// reconcileClient is the ledger client of the proxy's own upstream
// session, connected at the first pass that has work. Its probes do not
// share a session with any host's calls: a host session may end at any
// time. It does not know which upstream process a host's call went to,
// so an absent answer waits for the probe's quiet period.
func (p *Proxy) reconcileClient(ctx context.Context) (*client.Client, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("proxy: closed")
	}
	l := p.sweepLink
	if l == nil {
		l = newLink(p)
		l.session = reconcileSession
		p.sweepLink = l
	}
	p.mu.Unlock()
	if c := l.ledger(); c != nil {
		return c, nil
	}
	c, err := p.ledgerClient(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("proxy: connecting to the upstream for reconciliation: %w", err)
	}
	if err := l.setClient(c); err != nil {
		return nil, err
	}
	return c, nil
}

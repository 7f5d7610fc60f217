package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// This file is agentctl ledger reconcile --auto [--watch]: the UNKNOWN
// records of the tenant that are due for an attempt are settled on
// evidence from the server, without a person (DESIGN.md,
// "Reconciliation"): re-sent with their key to a server that honours keys,
// else put to the probe the policy names for their tool.

// autoFlags are the flags of reconcile --auto.
type autoFlags struct {
	up     upstream
	policy string
	watch  bool
	every  time.Duration
	limit  int
}

// Bounds of --auto.
const (
	defaultAutoEvery = 30 * time.Second
	defaultAutoLimit = 50
	// minAutoWait spaces the passes of --watch when a record comes due
	// at once.
	minAutoWait = time.Second
	// autoSession is the ledger session of the clients --auto dials.
	autoSession = "agentctl-reconcile"
)

// autoLine is one record a pass looked at, as --json prints it.
type autoLine struct {
	Key      string       `json:"key"`
	Tool     string       `json:"tool"`
	Layer    string       `json:"layer"`
	Verdict  string       `json:"verdict"`
	Method   string       `json:"method"`
	State    ledger.State `json:"state"`
	Evidence string       `json:"evidence,omitempty"`
}

// autoSummary is what one pass did, as --json prints it last.
type autoSummary struct {
	Due     int `json:"due"`
	Settled int `json:"settled"`
	Unknown int `json:"unknown"`
	Errors  int `json:"errors"`
}

// autoRun is one reconcile --auto: its ledger, its policy and the ledger
// clients it dialed, one per layer.
type autoRun struct {
	a       *app
	st      ledger.Store
	f       *autoFlags
	policy  *confirm.Policy
	layers  []string
	tool    string
	clients map[string]*client.Client
	// tools are the server's tools whose records can be settled; keyAware
	// says whether the server honours keys. Both are known after the
	// first dial.
	tools    []string
	keyAware bool
}

// autoLayers are the layers --auto settles: a server guard's records are
// the server's to reconcile, with its own reconcilers.
func autoLayers(layer string) ([]string, error) {
	switch layer {
	case "":
		return []string{ledger.LayerClient, ledger.LayerProxy}, nil
	case ledger.LayerClient, ledger.LayerProxy:
		return []string{layer}, nil
	case ledger.LayerServer:
		return nil, exitf(exitUsage, "--layer server with --auto: a server guard's records are settled by the server's own reconcilers (its sweep); --auto settles client and proxy records")
	}
	return nil, exitf(exitUsage, "--layer %q: want client or proxy with --auto", layer)
}

// reconcileAuto runs reconcile --auto: one pass, or with --watch passes
// until ctx ends (SIGINT, SIGTERM), which ends it with exit 0.
func (a *app) reconcileAuto(ctx context.Context, f *autoFlags, tool string) error {
	if err := f.up.check(); err != nil {
		return err
	}
	if f.every <= 0 {
		return exitf(exitUsage, "--every %s: want a positive duration such as 30s", f.every)
	}
	if f.limit <= 0 || f.limit > ledger.MaxDueLimit {
		return exitf(exitUsage, "--limit %d: want 1 to %d records a pass", f.limit, ledger.MaxDueLimit)
	}
	layers, err := autoLayers(a.layer)
	if err != nil {
		return err
	}
	policy, err := loadPolicy(f.policy)
	if err != nil {
		return err
	}
	st, err := a.ledger(ctx, existing)
	if err != nil {
		return err
	}
	r := &autoRun{a: a, st: st, f: f, policy: policy, layers: layers, tool: tool, clients: map[string]*client.Client{}}
	defer r.close()
	for {
		next, err := r.pass(ctx)
		if f.watch && ctx.Err() != nil {
			return nil
		}
		if err != nil || !f.watch {
			return err
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// close closes the clients (and stops the servers they started).
func (r *autoRun) close() {
	for _, l := range slices.Sorted(maps.Keys(r.clients)) {
		r.a.closeOrWarn("the MCP session", r.clients[l].Close)
	}
}

// client is the ledger client of layer, dialed at its first use; the first
// one dialed learns the server's tools.
func (r *autoRun) client(ctx context.Context, layer string) (*client.Client, error) {
	if c, ok := r.clients[layer]; ok {
		return c, nil
	}
	connect := func(ctx context.Context) (*mcp.ClientSession, error) { return r.f.up.connect(ctx, nil) }
	c, err := client.Dial(ctx, connect, r.st, &client.Options{
		Tenant: r.a.tenant, Layer: layer, Session: autoSession, Policy: r.policy,
		Logger: r.a.logger(), Requester: r.a.who(), Peer: r.f.up.peer(),
	})
	if err != nil {
		return nil, withCode(exitUnreachable, err)
	}
	r.clients[layer] = c
	if r.tools == nil {
		if err := r.learn(ctx, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// learn lists the server's tools and keeps those whose UNKNOWN records
// --auto can settle: every tool of a server that honours keys (a
// re-send), else those the policy names a probe for.
func (r *autoRun) learn(ctx context.Context, c *client.Client) error {
	s := c.Session()
	if ir := s.InitializeResult(); ir != nil && ir.Capabilities != nil {
		_, r.keyAware = ir.Capabilities.Experimental[wire.Capability]
	}
	tools, err := listTools(ctx, s)
	if err != nil {
		return err
	}
	r.tools = []string{}
	for _, t := range tools {
		if (r.tool == "" || t.Name == r.tool) && (r.keyAware || r.policy.ProbeFor(t.Name) != nil) {
			r.tools = append(r.tools, t.Name)
		}
	}
	slices.Sort(r.tools)
	if len(r.tools) > 0 {
		return nil
	}
	what := "any tool"
	if r.tool != "" {
		what = "tool " + r.tool
	}
	return exitf(exitUsage, "%s does not honour keys and the policy names no probe for %s of it, so nothing can settle its UNKNOWN records without a person; add a \"reconcile\" section to the policy (--policy), or reconcile by hand (agentctl ledger reconcile KEY --as ...)",
		r.f.up.label(), what)
}

// pass settles the records due now, prints a line for each and a summary,
// and says when the next pass is due: the earliest next attempt of a
// record left UNKNOWN, at least minAutoWait and at most --every away; at
// once when the pass met its limit.
func (r *autoRun) pass(ctx context.Context) (next time.Duration, err error) {
	if _, err := r.client(ctx, r.layers[0]); err != nil {
		return 0, err
	}
	var recs []*ledger.Record
	for chunk := range slices.Chunk(r.tools, ledger.MaxDueTools) {
		if len(recs) >= r.f.limit {
			break
		}
		got, err := ledger.DueUnknown(ctx, r.st, ledger.DueQuery{Tenant: r.a.tenant, Layers: r.layers, Tools: chunk, Limit: r.f.limit - len(recs)})
		if errors.Is(err, ledger.ErrNoDueList) {
			return 0, exitf(exitUsage, "this ledger cannot list the UNKNOWN records due for reconciliation; use a SQLite or PostgreSQL ledger of this version")
		}
		if err != nil {
			return 0, err
		}
		recs = append(recs, got...)
	}
	next = r.f.every
	if len(recs) >= r.f.limit {
		next = 0
	}
	var sum autoSummary
	var firstErr error
	for _, rec := range recs {
		if ctx.Err() != nil {
			break
		}
		sum.Due++
		line, after, err := r.settle(ctx, rec)
		switch {
		case err != nil:
			sum.Errors++
			if firstErr == nil {
				firstErr = err
			}
		case ledger.RowOf(after.State).Act == ledger.ActReconcile:
			sum.Unknown++
			if due := time.Until(after.ReconcileAt); !after.ReconcileAt.IsZero() && due < next {
				next = max(due, minAutoWait)
			}
		default:
			sum.Settled++
		}
		if err := r.print(line); err != nil {
			return 0, err
		}
	}
	if r.a.json {
		if err := r.a.printJSON(struct {
			Summary autoSummary `json:"summary"`
		}{sum}); err != nil {
			return 0, err
		}
	} else {
		r.a.printf("%d due, %d settled, %d still UNKNOWN, %d errors\n", sum.Due, sum.Settled, sum.Unknown, sum.Errors)
	}
	if firstErr != nil && ctx.Err() == nil {
		return next, fmt.Errorf("%d of %d records could not be reconciled (the first: %w); run again once that is fixed", sum.Errors, sum.Due, firstErr)
	}
	return next, nil
}

// settle settles one record: a re-send to a server that honours keys,
// else its probe.
func (r *autoRun) settle(ctx context.Context, rec *ledger.Record) (autoLine, *ledger.Record, error) {
	line := autoLine{Key: rec.Key, Tool: rec.Tool, Layer: rec.Layer, Method: string(ledger.MethodResend)}
	c, err := r.client(ctx, rec.Layer)
	if err != nil {
		line.Verdict, line.State, line.Evidence = "error", rec.State, err.Error()
		return line, rec, err
	}
	after, err := c.Resend(ctx, rec)
	if errors.Is(err, client.ErrNoResend) {
		line.Method = string(ledger.MethodProbe)
		after, err = c.Reconcile(ctx, rec, nil)
	}
	switch {
	case errors.Is(err, client.ErrNoProbe):
		line.Verdict, line.State, line.Evidence = "skipped", rec.State, "no probe for this tool, and its call cannot be re-sent"
		return line, rec, nil
	case errors.Is(err, ledger.ErrStateChanged), errors.Is(err, ledger.ErrLeaseLost):
		if after == nil {
			after = rec
		}
		line.Verdict, line.State, line.Method, line.Evidence = "changed", after.State, "-", "settled or taken over by someone else meanwhile"
		return line, after, nil
	case err != nil:
		line.Verdict, line.State, line.Evidence = "error", rec.State, ledger.OneLine(err.Error(), 300)
		return line, rec, err
	}
	line.State, line.Verdict = after.State, verdictOf(rec, after)
	if after.FindingCount > rec.FindingCount && len(after.Findings) > 0 {
		line.Evidence = after.Findings[len(after.Findings)-1].Evidence
	}
	return line, after, nil
}

// verdictOf names what a pass found about rec, now after: the finding it
// recorded, or, for a re-send the server answered, what the answer made
// of the record.
func verdictOf(rec, after *ledger.Record) string {
	if after.FindingCount > rec.FindingCount && len(after.Findings) > 0 {
		return string(after.Findings[len(after.Findings)-1].Verdict)
	}
	// Not run is said only by a finding: a re-send's RETRYABLE record
	// may be one its server still runs.
	if v := ledger.RowOf(after.State).Verdict; v != "" && v != ledger.VerdictNotRun {
		return string(v)
	}
	return strings.ToLower(string(after.State))
}

// print prints one record's line.
func (r *autoRun) print(l autoLine) error {
	if r.a.json {
		return r.a.printJSON(l)
	}
	r.a.printf("%s %s: %s by %s -> %s", l.Key, l.Tool, l.Verdict, l.Method, l.State)
	if l.Evidence != "" {
		r.a.printf(" (%s)", shorten(l.Evidence, 160))
	}
	r.a.printf("\n")
	return nil
}

package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

// This file settles an UNKNOWN call inline with the probe the policy names
// for its tool (DESIGN.md, "Reconciliation"): a read-only tool of the same
// server, for servers that do not honour keys. A call that meets an
// UNKNOWN record of its key asks the probe, within a time budget, records
// the finding with ledger.Resolve, and answers what the record became: a
// replay of what the probe found, a run under the same key when the call
// provably did not take effect, or UNKNOWN as before.

// DefaultProbeBudget bounds an inline probe when Options.ProbeBudget is
// zero: a re-planned call waits this long at most for its answer.
const DefaultProbeBudget = 5 * time.Second

// probeFor is the probe the policy names for op's tool, nil when there is
// none or op cannot be probed: its arguments are not known, or a probe
// already answered for it in this call.
func (c *Caller[P, R]) probeFor(op *operation[P], rec *ledger.Record) *confirm.Probe {
	if op.probed || op.args == nil || rec.Tombstone {
		return nil
	}
	return c.opts.Policy.ProbeFor(op.name)
}

// ErrNoProbe: the policy names no probe for the record's tool.
var ErrNoProbe = errors.New("caller: the policy names no probe for this tool")

// Reconcile asks the probe the policy names for rec's tool about rec, an
// UNKNOWN record of this Caller's tenant and layer, and records what it
// found with ledger.Resolve; it is what a background sweep runs for each
// UNKNOWN record. args are the call's arguments; nil uses the record's
// stored arguments, which are redacted: they serve templates that name
// only {{.Key}} and fields that hold no secret. It returns the record as
// it is now (another reconciler may have settled it first:
// ledger.ErrStateChanged), and ErrNoProbe when there is no probe.
func (c *Caller[P, R]) Reconcile(ctx context.Context, rec *ledger.Record, args json.RawMessage) (*ledger.Record, error) {
	if rec.Tenant != c.opts.Tenant || rec.Layer != c.opts.Layer {
		return rec, fmt.Errorf("caller: reconcile: the record of %s is tenant %s layer %s, not this caller's %s %s; reconcile it with a caller of its own", rec.Tool, rec.Tenant, rec.Layer, c.opts.Tenant, c.opts.Layer)
	}
	pr := c.opts.Policy.ProbeFor(rec.Tool)
	if pr == nil {
		return rec, fmt.Errorf("%w: %s", ErrNoProbe, rec.Tool)
	}
	if args == nil {
		args = rec.Arguments
	}
	op := &operation[P]{name: rec.Tool, args: args, id: rec.ID, settings: c.opts.Tools.For(rec.Tool)}
	after, err := ledger.Resolve(ctx, c.store, rec, c.probeFinding(ctx, op, rec, pr))
	if err == nil && ledger.RowOf(after.State).Act != ledger.ActReconcile {
		c.sends.forget(rec.ID)
		c.tel.Resolved(ctx, rec, after, ledger.MethodProbe)
	}
	return after, err
}

// reconcileByProbe asks pr about op's UNKNOWN record rec and settles the
// record by what it finds; then op is answered by the record's new state
// as settle answers any record. ok is false when the record could not be
// settled through the ledger: the caller answers UNKNOWN.
func (c *Caller[P, R]) reconcileByProbe(ctx context.Context, op *operation[P], rec *ledger.Record, pr *confirm.Probe) (o *Outcome[R], err error, again bool) {
	op.probed = true
	f := c.probeFinding(ctx, op, rec, pr)
	after, rerr := ledger.Resolve(ctx, c.store, rec, f)
	switch {
	case rerr == nil:
		if ledger.RowOf(after.State).Act != ledger.ActReconcile {
			c.sends.forget(rec.ID)
			c.tel.Resolved(ctx, rec, after, ledger.MethodProbe)
		}
		c.log.Info("reconciled by probe", "tool", op.name, "key", ledger.ShortHash(rec.Key), "probe", pr.Probe,
			"verdict", f.Verdict, "state", after.State)
	case (errors.Is(rerr, ledger.ErrStateChanged) || errors.Is(rerr, ledger.ErrLeaseLost)) && after != nil:
		// Settled or taken over by someone else first: answer as it is now.
		c.log.Info("record changed while the probe looked", "tool", op.name, "key", ledger.ShortHash(rec.Key), "state", after.State)
	default:
		c.log.Warn("recording the probe's finding failed", "tool", op.name, "key", ledger.ShortHash(rec.Key), "probe", pr.Probe, "err", rerr)
		return nil, c.fail(op, rec, ErrOutcomeUnknown), false
	}
	return c.settle(ctx, op, after)
}

// probeFinding runs the probe within the time budget and says what its answer
// means for rec (the answer convention, or the found condition). An
// absent answer is believed only once the original request can no longer
// take effect (quietLeft).
func (c *Caller[P, R]) probeFinding(ctx context.Context, op *operation[P], rec *ledger.Record, pr *confirm.Probe) ledger.Finding {
	f := ledger.Finding{Verdict: ledger.VerdictUnknown, Method: ledger.MethodProbe, By: pr.Probe}
	args, err := pr.Arguments(wireKey(c.conn.Server(), rec.ID), op.args)
	if err != nil {
		f.Evidence = err.Error()
		return f
	}
	budget := c.opts.ProbeBudget
	if budget <= 0 {
		budget = DefaultProbeBudget
	}
	pctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	probe := &operation[P]{req: Request[P]{Tool: pr.Probe}, name: pr.Probe, args: args, settings: c.opts.Tools.For(pr.Probe)}
	res, raw, _, err, _ := c.send(pctx, probe, false)
	if err != nil {
		// A protocol or transport error: nothing is known.
		f.Evidence = fmt.Sprintf("probe %s did not answer: %s", pr.Probe, ledger.OneLine(err.Error(), 300))
		return f
	}
	// The probe's answer, as the original tool's result is stored: it is
	// the replay when found.
	stored, compacted, err := c.encode(op, res, raw)
	if err != nil {
		f.Evidence = fmt.Sprintf("probe %s answered, and its answer cannot be kept: %s", pr.Probe, ledger.OneLine(err.Error(), 300))
		return f
	}
	found, err := pr.Judge(stored, c.codec.IsError(res))
	if compacted && pr.Found != "" {
		// The condition is over the answer as the server gave it.
		if full, ferr := c.codec.Encode(res); ferr == nil {
			found, err = pr.Judge(full, c.codec.IsError(res))
		}
	}
	said := ledger.OneLine(c.codec.Text(res), 200)
	switch {
	case err != nil:
		f.Evidence = ledger.OneLine(err.Error(), 300)
	case found:
		f.Verdict, f.Result = ledger.VerdictFound, stored
		f.Evidence = fmt.Sprintf("probe %s found it: %s", pr.Probe, said)
	case pr.Asks():
		f.Evidence = fmt.Sprintf("probe %s found nothing (%s); the policy leaves an absent answer to a person", pr.Probe, said)
	case c.exited(rec):
		f.Verdict = ledger.VerdictNotRun
		f.Evidence = fmt.Sprintf("probe %s found nothing (%s), and the server process the call was sent to has exited", pr.Probe, said)
	default:
		wait := c.quietLeft(rec, pr)
		if wait > 0 {
			f.Evidence = fmt.Sprintf("probe %s found nothing (%s), but the call may still take effect: not believed before its quiet period ends in %s",
				pr.Probe, said, wait.Round(time.Millisecond))
			f.RetryIn = wait
			return f
		}
		f.Verdict = ledger.VerdictNotRun
		f.Evidence = fmt.Sprintf("probe %s found nothing (%s), %s after the call's last send", pr.Probe, said, c.opts.Now().Sub(rec.UpdatedAt).Round(time.Millisecond))
	}
	return f
}

// quietLeft is how long until an absent answer about rec is believed: the
// rest of the probe's quiet period (at least one attempt's deadline),
// counted from when the record became UNKNOWN, which is no earlier than
// the call's last send. Zero once it has passed.
func (c *Caller[P, R]) quietLeft(rec *ledger.Record, pr *confirm.Probe) time.Duration {
	quiet := max(pr.QuietPeriod(), c.opts.AttemptTimeout)
	return max(rec.UpdatedAt.Add(quiet).Sub(c.opts.Now()), 0)
}

// Exiter is implemented by a Conn whose server is a child process it
// starts (stdio): Exited reports whether the process that an attempt went
// out on (Attempt.Via) has exited, so that nothing sent on it can still
// take effect. A probe's absent answer about a call whose last request
// went to such a process is believed at once, without the quiet period.
type Exiter interface {
	Exited(via any) bool
}

// exited reports whether rec's last request, as this process sent it, went
// to a server process that has since exited.
func (c *Caller[P, R]) exited(rec *ledger.Record) bool {
	ex, ok := c.conn.(Exiter)
	if !ok {
		return false
	}
	via, ok := c.sends.get(rec.ID, rec.Fence)
	return ok && ex.Exited(via)
}

// lastSends remembers, for calls this process left UNKNOWN, the connection
// their last request went out on (Attempt.Via) under which fence. A
// record taken over since (a re-send raises its fence) no longer matches.
// The zero value is ready to use.
type lastSends struct {
	// mu guards m.
	mu sync.Mutex
	m  map[ledger.ID]lastSend
}

type lastSend struct {
	fence int64
	via   any
}

// maxLastSends bounds the memory: UNKNOWN calls are rare, and one not
// remembered only waits for its quiet period.
const maxLastSends = 256

func (s *lastSends) note(id ledger.ID, fence int64, via any) {
	if via == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[ledger.ID]lastSend{}
	}
	for k := range s.m {
		if len(s.m) < maxLastSends {
			break
		}
		delete(s.m, k)
	}
	s.m[id] = lastSend{fence: fence, via: via}
}

func (s *lastSends) get(id ledger.ID, fence int64) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok || e.fence != fence {
		return nil, false
	}
	return e.via, true
}

func (s *lastSends) forget(id ledger.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

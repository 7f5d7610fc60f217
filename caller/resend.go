package caller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
)

// canResend reports whether an UNKNOWN operation may be reconciled by
// sending it again: only to a server that advertises the idempotency
// capability and still remembers the key, which then either replays its
// first execution or runs the call for the first time, never twice.
func (c *Caller[P, R]) canResend(op *operation[P], rec *ledger.Record) bool {
	if op.args == nil {
		return false
	}
	s := c.conn.Server()
	return Resendable(rec, op.fp, s.KeyAware, s.Capability, c.opts.Now())
}

// resend takes an UNKNOWN record back to PROCESSING under a fresh lease and
// sends the call again with the same key.
func (c *Caller[P, R]) resend(ctx context.Context, op *operation[P], rec *ledger.Record) (*Outcome[R], error) {
	op.id = rec.ID
	// A take-over: the store gives the record this owner and the next fence,
	// so the earlier owner, should it wake up, can record nothing.
	again, err := c.lc.Resend(ctx, rec)
	if errors.Is(err, ledger.ErrStateChanged) {
		return c.settleID(ctx, op) // another caller reconciled it first
	}
	if err != nil {
		return nil, fmt.Errorf("caller: reconcile %s: %w", rec.Tool, err)
	}
	c.log.Info("re-sending an UNKNOWN call to a key-aware server", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key))
	op.resent = ledger.ResentOf(rec, again)
	o, err := c.run(ctx, op, again)
	c.resentResolved(ctx, rec, o, err)
	return o, err
}

// resentResolved reports to telemetry that the re-send of rec, an UNKNOWN
// record, resolved it, when it did: the server answered (o), or the call
// ended in a state other than UNKNOWN and PROCESSING, as the record now
// says.
func (c *Caller[P, R]) resentResolved(ctx context.Context, rec *ledger.Record, o *Outcome[R], err error) {
	if o != nil {
		c.tel.Resolved(ctx, rec, o.Record, ledger.MethodResend)
		return
	}
	st, ok := StateOf(err)
	if !ok || ledger.RowOf(st).Ran == ledger.RanMaybe {
		return
	}
	after, gerr := c.store.Get(ctx, rec.ID)
	if gerr != nil {
		c.log.Debug("reading the re-sent record for telemetry", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "err", gerr)
		return
	}
	c.tel.Resolved(ctx, rec, after, ledger.MethodResend)
}

// Resendable reports whether an UNKNOWN record may be reconciled by
// sending its call again, with arguments of fingerprint fp: only the same
// arguments, and only to a server that advertises the idempotency
// capability (advertised; capability is its value) and still remembers
// the key, which then either replays its first execution or runs the call
// for the first time, never twice.
func Resendable(rec *ledger.Record, fp string, advertised bool, capability any, now time.Time) bool {
	if !advertised || rec.Tombstone || rec.Fingerprint != fp {
		return false
	}
	if r, ok := Retention(capability); ok && !now.Before(rec.CreatedAt.Add(r)) {
		return false // the server may have forgotten the key
	}
	return true
}

// Retention is how long a server keeps keys, from the value of its
// idempotency capability ({"retentionSeconds": N}, decoded from JSON).
func Retention(capability any) (time.Duration, bool) {
	m, ok := capability.(map[string]any)
	if !ok {
		return 0, false
	}
	secs, ok := m["retentionSeconds"].(float64)
	if !ok || secs <= 0 {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

// ErrNoResend: the record's call cannot be re-sent: the server does not
// advertise the idempotency capability (or may have forgotten the key), or
// the record's stored arguments are not the ones sent (redacted).
var ErrNoResend = errors.New("caller: the call cannot be re-sent with its key")

// Resend settles rec, an UNKNOWN record of this Caller's tenant and layer,
// by sending its call again, with its key and its stored arguments, to a
// key-aware server, which answers with its first execution's result, or
// runs the call for the first time if it never saw it, never twice: what a
// background sweep runs for a server that honours keys. It returns the
// record as it is after. A re-send whose outcome is unknown too leaves the
// record UNKNOWN, with the attempt in its history and the next one due
// after the backoff (ledger.ReconcileDelay). ErrNoResend when the call
// cannot be re-sent (see Resendable); the record is then as it was.
func (c *Caller[P, R]) Resend(ctx context.Context, rec *ledger.Record) (*ledger.Record, error) {
	if rec.Tenant != c.opts.Tenant || rec.Layer != c.opts.Layer {
		return rec, fmt.Errorf("caller: resend: the record of %s is tenant %s layer %s, not this caller's %s %s; re-send it with a caller of its own", rec.Tool, rec.Tenant, rec.Layer, c.opts.Tenant, c.opts.Layer)
	}
	op := &operation[P]{req: Request[P]{Tool: rec.Tool}, name: rec.Tool, args: rec.Arguments, id: rec.ID, settings: c.opts.Tools.For(rec.Tool)}
	if len(op.args) > 0 {
		fp, err := args.Fingerprint(op.args, op.settings.Exclude...)
		if err == nil {
			op.fp = fp
		}
	}
	if ledger.RowOf(rec.State).Act != ledger.ActReconcile || op.fp == "" || !c.canResend(op, rec) {
		return rec, fmt.Errorf("%w: %s key %s", ErrNoResend, rec.Tool, ledger.ShortHash(rec.Key))
	}
	again, err := c.lc.Resend(ctx, rec)
	if errors.Is(err, ledger.ErrStateChanged) || errors.Is(err, ledger.ErrLeaseLost) {
		// Settled or taken over by someone else first.
		if cur, gerr := c.store.Get(ctx, rec.ID); gerr == nil {
			return cur, err
		}
		return rec, err
	}
	if err != nil {
		return rec, fmt.Errorf("caller: resend %s key %s: %w", rec.Tool, ledger.ShortHash(rec.Key), err)
	}
	c.log.Info("re-sending an UNKNOWN call to a key-aware server", "tool", rec.Tool, "key", ledger.ShortHash(rec.Key))
	op.resent = ledger.ResentOf(rec, again)
	o, sendErr := c.run(ctx, op, again)
	c.resentResolved(ctx, rec, o, sendErr)
	after, err := c.store.Get(ctx, rec.ID)
	if err != nil {
		return rec, fmt.Errorf("caller: resend %s key %s: read the record after: %w", rec.Tool, ledger.ShortHash(rec.Key), err)
	}
	if ledger.RowOf(after.State).Act == ledger.ActReconcile && after.Fence == again.Fence && sendErr != nil {
		// The attempt joins the history, and the backoff spaces the next.
		f := ledger.Finding{Verdict: ledger.VerdictUnknown, Method: ledger.MethodResend, By: "re-send",
			Evidence: "the re-sent call's outcome is unknown too: " + ledger.OneLine(sendErr.Error(), 300)}
		if out, rerr := ledger.Resolve(ctx, c.store, after, f); rerr == nil {
			after = out
		}
	}
	if ledger.RowOf(after.State).Act != ledger.ActReconcile {
		c.sends.forget(rec.ID)
	}
	return after, nil
}

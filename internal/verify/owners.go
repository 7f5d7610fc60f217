package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/process"
)

// soon is how fast "at once" must be: far below the 30 s default lease a
// follower would otherwise wait out.
const soon = 5 * time.Second

// claimArgs claims key in the scratch tenant for owner, as a caller would.
func (r *runner) claim(ctx context.Context, tenant, key, owner string, lease, retention time.Duration, policy ledger.ReusePolicy) (ledger.Claim, error) {
	doc := json.RawMessage(`{"verify":true}`)
	fp, err := args.Fingerprint(doc)
	if err != nil {
		return ledger.Claim{}, err
	}
	return r.t.Store.Claim(ctx, ledger.ClaimRequest{
		ID:          ledger.ID{Tenant: tenant, Layer: r.layer, Tool: r.t.Tool, Key: key},
		Session:     "verify-" + r.id,
		Fingerprint: fp, Arguments: doc, Owner: owner, Lease: lease,
		Retention: retention, ReusePolicy: policy,
	})
}

func killedOwner(ctx context.Context, r *runner) outcome {
	o := r.deadOwner(ctx)
	if o.status != Pass || r.t.Kill == nil {
		if o.status == Pass {
			o.figure += "; the server is not ours to kill (not --server)"
		}
		return o
	}
	s := r.killedServer(ctx)
	if s.status != Pass {
		s.figure = o.figure + "; " + s.figure
		return s
	}
	return pass("%s; %s", o.figure, s.figure)
}

// deadOwner: a real process of this host owns a record, then dies; the
// next caller knows at once, without waiting out the lease.
func (r *runner) deadOwner(ctx context.Context) outcome {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return skip("no sleep program to stand for the owner process: %v", err)
	}
	cmd := exec.CommandContext(ctx, sleep, "60")
	if err := cmd.Start(); err != nil {
		return fail("", "starting the owner process: %v", err)
	}
	owner, oerr := process.Of(cmd.Process.Pid, "verify-owner")
	key := r.key("g6")
	var c ledger.Claim
	var cerr error
	if oerr == nil {
		c, cerr = r.claim(ctx, r.tenant, key, owner.String(), ledger.DefaultLease, 0, "")
	}
	// The owner dies with its record PROCESSING under a 30 s lease.
	kerr := cmd.Process.Kill()
	if werr := cmd.Wait(); werr == nil && kerr == nil {
		return fail("", "the owner process outlived its kill")
	}
	if err := errors.Join(oerr, cerr); err != nil {
		return fail("", "claiming for the owner process: %v", err)
	}
	lc := &ledger.Lifecycle{Store: r.t.Store, Owner: process.NewOwner("agentctl-verify"), Wait: soon, Logger: r.log}
	start := time.Now()
	rec, err := lc.Follow(ctx, c.Record)
	took := time.Since(start)
	figure := fmt.Sprintf("owner killed: %s in %s (lease %s)", rec.State, ms(took), ledger.DefaultLease)
	switch {
	case err != nil:
		return fail(figure, "the next caller did not learn the owner was gone within %s: %v", soon, err)
	case ledger.RowOf(rec.State).Act != ledger.ActReconcile || rec.ErrorKind != ledger.KindOwnerDead:
		return fail(figure, "the record became %s (%s); want UNKNOWN (owner_dead): it may have run", rec.State, rec.ErrorKind)
	}
	return pass("%s", figure)
}

// killedServer kills the --server child's process group right after a
// call was sent: the call ends UNKNOWN or resolved (a key-aware server
// that knows what happened), at once, and is never run twice.
func (r *runner) killedServer(ctx context.Context) outcome {
	h := &hooks{}
	cl, err := r.dial(ctx, r.tenant, h)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(cl)
	h.killNext.Store(true)
	key := r.key("g6s")
	start := time.Now()
	_, err = r.call(ctx, cl, key, r.copyArgs())
	took := time.Since(start)
	h.mu.Lock()
	kerr := h.killErr
	h.mu.Unlock()
	if kerr != nil {
		return fail("", "killing the server: %v", kerr)
	}
	state := ledger.StateSucceeded
	if err != nil {
		state, _ = client.StateOf(err)
	}
	figure := fmt.Sprintf("server killed mid-call: %s in %s", orNone(state), ms(took))
	c, has, cerr := r.count(ctx, r.wireKey(r.tenant, key))
	if cerr != nil {
		return fail(figure, "%v", cerr)
	}
	if has {
		figure += fmt.Sprintf(", %d execution(s)", c)
	}
	switch {
	case !state.Valid() || ledger.RowOf(state).Act != ledger.ActReconcile && ledger.RowOf(state).Act != ledger.ActReplay:
		return fail(figure, "the call ended %v; want UNKNOWN or what the server recorded", err)
	case took > soon:
		return fail(figure, "it took %s to know; want at once (under %s)", ms(took), soon)
	case has && c > 1:
		return fail(figure, "the tool ran %d times", c)
	case !r.keyAware && h.sent.Load() > 1:
		return fail(figure, "the call was re-sent %d times to a server that does not honour keys", h.sent.Load())
	}
	return pass("%s", figure)
}

func orNone(s ledger.State) string {
	if s == "" {
		return "no state"
	}
	return string(s)
}

func ms(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func leaseTakeOver(ctx context.Context, r *runner) outcome {
	const lease = 200 * time.Millisecond
	key := r.key("g7")
	// An owner on no host this process can check: only its lease decides.
	stale := "verify-stale-owner"
	c, err := r.claim(ctx, r.tenant, key, stale, lease, 0, "")
	if err != nil || !c.Won {
		return fail("", "claiming for the first owner: won %v, %v", c.Won, err)
	}
	me := process.NewOwner("agentctl-verify")
	lc := &ledger.Lifecycle{Store: r.t.Store, Owner: me, Wait: soon, Logger: r.log}
	start := time.Now()
	rec, err := lc.Follow(ctx, c.Record)
	took := time.Since(start)
	if err != nil || ledger.RowOf(rec.State).Act != ledger.ActReconcile {
		return fail("", "after the %s lease the record is %s, %v; want UNKNOWN", lease, rec.State, err)
	}
	took2, err := lc.Resend(ctx, rec)
	if err != nil {
		return fail("", "taking the key over: %v", err)
	}
	figure := fmt.Sprintf("lease %s ran out: UNKNOWN after %s; take-over fence %d→%d", lease, ms(took), c.Record.Fence, took2.Fence)
	if took2.Fence <= c.Record.Fence {
		return fail(figure, "the take-over's fence %d is not above the stale owner's %d", took2.Fence, c.Record.Fence)
	}
	late := &ledger.Lifecycle{Store: r.t.Store, Owner: stale, Logger: r.log}
	_, err = late.Settle(ctx, ledger.Lease{ID: rec.ID, Owner: stale, Fence: c.Record.Fence}, ledger.StateProcessing,
		ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(`{"content":[]}`)})
	if !errors.Is(err, ledger.ErrLeaseLost) {
		return fail(figure, "the stale owner's late write got %v; want it refused (lease lost)", err)
	}
	if now, err := r.t.Store.Get(ctx, rec.ID); err != nil || ledger.RowOf(now.State).Waits != ledger.WaitsTool || now.Owner != me {
		return fail(figure, "after the refused late write the record is %+v, %v; want it unchanged", now, err)
	}
	figure += "; stale owner's write refused"
	if !r.keyAware {
		return pass("%s; the server is not key-aware", figure)
	}
	cs, err := r.session(ctx, nil)
	if err != nil {
		return fail(figure, "%v", err)
	}
	defer closeAfterCheck(cs)
	skey := r.key("g7s")
	if _, err := r.direct(ctx, cs, skey, 2, r.copyArgs()); err != nil {
		return fail(figure, "the request with fence 2 failed: %v", err)
	}
	res, err := r.direct(ctx, cs, skey, 1, r.copyArgs())
	if code, reason, _ := rpcCode(err); code != ledger.CodeInProgress || reason != ledger.ReasonStaleFence {
		return fail(figure, "the server answered fence 1 after fence 2 with %s; want %d %s", answerText(res, err), ledger.CodeInProgress, ledger.ReasonStaleFence)
	}
	return pass("%s; server refused fence 1 after 2 (%s)", figure, ledger.ReasonStaleFence)
}

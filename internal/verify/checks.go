package verify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/process"
	"github.com/mcpledger/mcpledger/wire"
)

func tenantsApart(ctx context.Context, r *runner) outcome {
	key := r.key("g8")
	a, err := r.dial(ctx, r.tenant, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(a)
	if _, err := r.call(ctx, a, key, r.copyArgs()); err != nil {
		return fail("", "the call in the first tenant failed: %v", err)
	}
	idB := ledger.ID{Tenant: r.other, Layer: r.layer, Tool: r.t.Tool, Key: key}
	if rec, err := r.t.Store.Get(ctx, idB); !errors.Is(err, ledger.ErrNotFound) {
		return fail("", "the second tenant reads the key's record (%v, tenant %s): it sees the first tenant's", err, tenantOf(rec))
	}
	page, err := r.t.Store.List(ctx, ledger.Filter{Tenant: r.other})
	if err != nil {
		return fail("", "listing the second tenant: %v", err)
	}
	if len(page.Records) > 0 {
		return fail("", "the second tenant's list shows %d record(s) it never wrote (tenant %s)", len(page.Records), page.Records[0].Tenant)
	}
	b, err := r.dial(ctx, r.other, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(b)
	o, err := r.call(ctx, b, key, r.copyArgs())
	if err != nil {
		return fail("", "the call in the second tenant failed: %v", err)
	}
	if o.Replayed {
		return fail("", "the second tenant got the first tenant's result replayed")
	}
	figure := "one key in 2 tenants: 2 records, no cross-replay"
	if ca, has, err := r.count(ctx, r.wireKey(r.tenant, key)); err != nil {
		return fail(figure, "%v", err)
	} else if has {
		cb, _, err := r.count(ctx, r.wireKey(r.other, key))
		if err != nil {
			return fail(figure, "%v", err)
		}
		figure += fmt.Sprintf(", %d+%d executions", ca, cb)
		if ca != 1 || cb != 1 {
			return fail(figure, "want one execution per tenant")
		}
	}
	return pass("%s", figure)
}

func tenantOf(rec *ledger.Record) string {
	if rec == nil {
		return "none"
	}
	return rec.Tenant
}

// secretArg is the argument G9 adds: its name and value are both of the
// kinds the ledger's redaction recognises.
const secretArg = "api_token"

func secretsRedacted(ctx context.Context, r *runner) outcome {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fail("", "%v", err)
	}
	secret := "sk_live_" + hex.EncodeToString(b[:])
	args := r.copyArgs()
	args[secretArg] = secret
	cl, err := r.dial(ctx, r.tenant, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	key := r.key("g9")
	// Whatever the server makes of the extra argument (most refuse it),
	// the claim stored it first.
	_, callErr := r.call(ctx, cl, key, args)
	if err := cl.Close(); err != nil {
		r.log.Debug("verify: closing the client", "err", err)
	}
	rec, err := r.t.Store.Get(ctx, ledger.ID{Tenant: r.tenant, Layer: r.layer, Tool: r.t.Tool, Key: key})
	if err != nil {
		return fail("", "no record of the call (it ended %v): %v", callErr, err)
	}
	for what, v := range map[string][]byte{"arguments": rec.Arguments, "result": rec.Result, "error message": []byte(rec.ErrorMessage)} {
		if bytes.Contains(v, []byte(secret)) {
			return fail("", "the record's %s hold the secret in clear", what)
		}
	}
	var stored map[string]any
	if err := json.Unmarshal(rec.Arguments, &stored); err != nil {
		return fail("", "the stored arguments are not a JSON object: %v", err)
	}
	shown := fmt.Sprint(stored[secretArg])
	figure := fmt.Sprintf("%s stored as %s", secretArg, shown)
	var size int64
	for _, f := range r.t.Files {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(figure, "reading the ledger file %s: %v", f, err)
		}
		size += int64(len(data))
		if bytes.Contains(data, []byte(secret)) {
			return fail(figure, "the ledger file %s holds the secret in clear", f)
		}
	}
	if len(r.t.Files) > 0 {
		figure += fmt.Sprintf("; not in the ledger's files (%d KiB searched)", size/1024)
	}
	return pass("%s", figure)
}

func retention(ctx context.Context, r *runner) outcome {
	me := process.NewOwner("agentctl-verify")
	lc := &ledger.Lifecycle{Store: r.t.Store, Owner: me, Logger: r.log}
	settle := func(c ledger.Claim) error {
		_, err := lc.Settle(ctx, ledger.Lease{ID: c.Record.ID, Owner: me, Fence: c.Record.Fence}, ledger.StateProcessing,
			ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(`{"content":[]}`), Attempts: 1})
		return err
	}
	// A short retention keeps the check quick; on a machine so slow that
	// the retention ran out between the settle and the reuse, the reuse
	// rightly wins, and the check runs again with a longer one.
	var keys [2]string
	keep := 300 * time.Millisecond
	for try := 0; ; try++ {
		lapsed := false
		for i, policy := range []ledger.ReusePolicy{ledger.Reexecute, ledger.Verify} {
			keys[i] = r.key("g10")
			c, err := r.claim(ctx, r.tenant, keys[i], me, 0, keep, policy)
			if err != nil || !c.Won {
				return fail("", "claiming under %s: won %v, %v", policy, c.Won, err)
			}
			if err := settle(c); err != nil {
				return fail("", "settling: %v", err)
			}
			settled := time.Now()
			again, err := r.claim(ctx, r.tenant, keys[i], me, 0, keep, policy)
			if err == nil && again.Won && time.Since(settled) >= keep && try < 2 {
				lapsed = true
				break
			}
			if err != nil || again.Won {
				return fail("", "within retention a reuse under %s won %v, %v; want the stored record", policy, again.Won, err)
			}
		}
		if !lapsed {
			break
		}
		keep *= 4
	}
	// Wait out the retention (the store's clock decides; allow it slack).
	deadline := time.Now().Add(keep + soon)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		c, err := r.claim(ctx, r.tenant, keys[0], me, 0, keep, ledger.Reexecute)
		if err != nil {
			return fail("", "reusing the key after retention: %v", err)
		}
		if c.Won {
			if c.Record.Attempts != 0 {
				return fail("", "the reuse after retention kept %d attempts; want a new operation", c.Record.Attempts)
			}
			if err := settle(c); err != nil {
				return fail("", "settling: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			return fail("", "the record was still kept %s after its %s retention", soon, keep)
		}
		select {
		case <-ctx.Done():
			return fail("", "%v", ctx.Err())
		case <-t.C:
		}
	}
	// The verify key was settled after the reexecute one: wait out its own
	// expiry too, so the purge removes it rather than racing it.
	vrec, err := r.t.Store.Get(ctx, ledger.ID{Tenant: r.tenant, Layer: r.layer, Tool: r.t.Tool, Key: keys[1]})
	if err != nil {
		return fail("", "reading the verify key's record: %v", err)
	}
	for !time.Now().After(vrec.ExpiresAt.Add(50 * time.Millisecond)) {
		if time.Now().After(deadline) {
			return fail("", "the verify key's record was still kept %s after its %s retention", soon, keep)
		}
		select {
		case <-ctx.Done():
			return fail("", "%v", ctx.Err())
		case <-t.C:
		}
	}
	n, err := r.t.Store.Purge(ctx, ledger.PurgeRequest{Tenant: r.tenant, ExpiredBy: time.Now()})
	if err != nil {
		return fail("", "purging the scratch tenant: %v", err)
	}
	c, err := r.claim(ctx, r.tenant, keys[1], me, 0, keep, ledger.Verify)
	switch {
	case err != nil:
		return fail("", "reusing the verify key after purge: %v", err)
	case c.Won || !c.Record.Tombstone:
		return fail("", "after purge a reuse under the verify policy won %v (tombstone %v); want the tombstone, for a person to decide", c.Won, c.Record.Tombstone)
	}
	figure := fmt.Sprintf("kept %s: reexecute reuses the key (a new operation), verify leaves a tombstone (%d purged)", keep, n)
	if r.retention > 0 {
		figure += fmt.Sprintf("; the server keeps keys %ds", r.retention)
	}
	return pass("%s", figure)
}

func capability(ctx context.Context, r *runner) outcome {
	cs, err := r.session(ctx, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(cs)
	key := r.key("g11")
	_, err = r.direct(ctx, cs, key, 0, r.copyArgs())
	if err != nil && r.keyAware {
		return fail("", "a request with a key failed: %v", err)
	}
	before, has, cerr := r.count(ctx, key)
	if cerr != nil {
		return fail("", "%v", cerr)
	}
	again, err2 := r.direct(ctx, cs, key, 0, r.copyArgs())
	_, replayed := replayMarker(again)
	replayed = replayed && err2 == nil
	ranAgain := false
	if has {
		after, _, err := r.count(ctx, key)
		if err != nil {
			return fail("", "%v", err)
		}
		ranAgain = after > before
	}
	honours := replayed && !ranAgain
	advert := "does not advertise the capability"
	if r.keyAware {
		advert = fmt.Sprintf("advertises %s (retention %ds)", wire.Capability, r.retention)
	}
	seen := "a repeated key ran again"
	if honours {
		seen = "a repeated key was replayed"
	} else if !ranAgain && !has {
		seen = "a repeated key got a fresh answer"
	}
	figure := advert + "; " + seen
	switch {
	case r.keyAware && !honours:
		return fail(figure, "the server advertises key-awareness but did not honour the key: clients will re-send ambiguous calls to it and run them twice")
	case !r.keyAware && honours:
		return pass("%s (clients treat it as not key-aware: ambiguous calls end UNKNOWN)", figure)
	}
	return pass("%s", figure)
}

package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testScratch covers what a scratch tenant needs (agentctl verify): a purge
// limited to one tenant, and erasing one tenant whole. Neither touches
// another tenant's records.
func testScratch(t *testing.T, newStore NewStore) {
	t.Run("PurgeOneTenant", func(t *testing.T) {
		e := newEnv(t, newStore)
		other := req("k", "owner-1")
		other.Tenant = "tenant-b"
		other.Retention = time.Hour
		for _, r := range []ledger.ClaimRequest{other, func() ledger.ClaimRequest { r := req("k", "owner-1"); r.Retention = time.Hour; return r }()} {
			rec := e.mustClaim(r)
			e.mustTransition(ledger.Transition{ID: rec.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "owner-1", Fence: rec.Fence, Result: []byte(`{"content":[]}`)})
		}
		e.clock.Advance(time.Hour)
		n, err := e.st.Purge(e.ctx, ledger.PurgeRequest{ExpiredBy: e.clock.Now(), Tenant: tenant})
		if err != nil || n != 1 {
			t.Fatalf("Purge(tenant %q) = %d, %v; want 1", tenant, n, err)
		}
		if _, err := e.st.Get(e.ctx, id("k")); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get(%s record) after its tenant's purge = %v; want ErrNotFound", tenant, err)
		}
		if _, err := e.st.Get(e.ctx, other.ID); err != nil {
			t.Errorf("Get(tenant-b record) after tenant %s's purge = %v; want it kept", tenant, err)
		}
	})
	t.Run("EraseTenant", func(t *testing.T) {
		e := newEnv(t, newStore)
		er, ok := ledger.Unwrap(e.st).(ledger.TenantEraser)
		if !ok {
			t.Skip("the store is no ledger.TenantEraser")
		}
		kept := req("k", "owner-1")
		kept.Tenant = "tenant-b"
		keptRec := e.mustClaim(kept)
		// Every state goes, leased ones included.
		e.mustClaim(req("processing", "owner-1"))
		e.reach("done", ledger.StateSucceeded)
		e.reach("unknown", ledger.StateUnknown)
		if _, err := er.EraseTenant(e.ctx, "bad tenant"); !errors.Is(err, ledger.ErrInvalidTenant) {
			t.Errorf("EraseTenant(%q) = %v; want ErrInvalidTenant", "bad tenant", err)
		}
		n, err := er.EraseTenant(e.ctx, tenant)
		if err != nil || n != 3 {
			t.Fatalf("EraseTenant(%q) = %d, %v; want 3", tenant, n, err)
		}
		for _, k := range []string{"processing", "done", "unknown"} {
			if _, err := e.st.Get(e.ctx, id(k)); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("Get(%q) after EraseTenant = %v; want ErrNotFound", k, err)
			}
		}
		if d := diff(e.mustGet(kept.ID), keptRec); d != "" {
			t.Errorf("EraseTenant(%q) changed tenant-b's record: %s", tenant, d)
		}
		if n, err := er.EraseTenant(e.ctx, tenant); err != nil || n != 0 {
			t.Errorf("EraseTenant(%q) again = %d, %v; want 0", tenant, n, err)
		}
	})
}

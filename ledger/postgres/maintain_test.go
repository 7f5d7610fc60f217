package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// TestSweepsInBatches: with a batch of 3, ExpireLeases and Purge loop over
// many batches and still change every due record exactly once; a record
// tombstoned by a Purge is not deleted by a later batch of the same call.
func TestSweepsInBatches(t *testing.T) {
	clock := ledgertest.NewClock(ledgertest.Start)
	st := open(t, pgtest.Schema(t), &postgres.Options{Now: clock.Now, BatchSize: 3})
	ctx := context.Background()
	const n = 10
	claim := func(key string, policy ledger.ReusePolicy) ledger.Lease {
		id := ledger.ID{Tenant: "t", Tool: "pay", Key: key}
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o", Lease: time.Minute,
			Retention: time.Hour, ReusePolicy: policy})
		if err != nil {
			t.Fatalf("Claim(%q) = %v", key, err)
		}
		return ledger.LeaseOf(c.Record)
	}
	for i := range n {
		claim(fmt.Sprintf("lease-%d", i), "")
		for _, policy := range []ledger.ReusePolicy{ledger.Reexecute, ledger.Verify} {
			l := claim(fmt.Sprintf("%s-%d", policy, i), policy)
			if _, err := st.Transition(ctx, ledger.Transition{ID: l.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: l.Owner, Fence: l.Fence}); err != nil {
				t.Fatal(err)
			}
		}
	}
	clock.Advance(2 * time.Hour)
	if got, err := st.ExpireLeases(ctx); err != nil || got != n {
		t.Errorf("ExpireLeases() = %d, %v; want %d in batches of 3", got, err, n)
	}
	// ExpiredBy lies past the tombstones' own expiry: only the rule that
	// one call never both tombstones and deletes a record keeps them.
	far := clock.Now().Add(10 * time.Hour)
	if got, err := st.Purge(ctx, ledger.PurgeRequest{ExpiredBy: far}); err != nil || got != 2*n {
		t.Errorf("Purge() = %d, %v; want %d (%d deleted, %d tombstoned)", got, err, 2*n, n, n)
	}
	for i := range n {
		key := fmt.Sprintf("%s-%d", ledger.Verify, i)
		rec, err := st.Get(ctx, ledger.ID{Tenant: "t", Tool: "pay", Key: key})
		if err != nil || !rec.Tombstone {
			t.Errorf("Get(%q) after Purge = %v, %v; want a tombstone", key, rec, err)
		}
	}
	if got, err := st.Purge(ctx, ledger.PurgeRequest{ExpiredBy: far}); err != nil || got != n {
		t.Errorf("second Purge() = %d, %v; want the %d tombstones deleted", got, err, n)
	}
	page, err := st.List(ctx, ledger.Filter{Tenant: "t", Limit: 100})
	if err != nil || len(page.Records) != n {
		t.Errorf("List after both purges = %d records, %v; want the %d UNKNOWN ones", len(page.Records), err, n)
	}
}

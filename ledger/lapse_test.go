package ledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// Pages of a state filter hold the records as they read: expired
// approvals move from PENDING_APPROVAL to REJECTED on every page, with
// paging that neither skips nor repeats a record.
func TestAsReadStorePages(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	raw, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "l.db"), &sqlite.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// 7 queued calls: the odd ones under a lease of a minute, the even
	// ones of a day.
	for i := range 7 {
		lease := 24 * time.Hour
		if i%2 == 1 {
			lease = time.Minute
		}
		now = now.Add(time.Second)
		if _, err := raw.Claim(ctx, ledger.ClaimRequest{
			ID: ledger.ID{Tenant: "t", Layer: ledger.LayerClient, Tool: "pay", Key: fmt.Sprintf("k%d", i)}, Fingerprint: "fp",
			Arguments: []byte(`{}`), Owner: ledger.QueueOwner(false, "v1", "alice"), Lease: lease, NeedsApproval: true,
		}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Hour)
	st := ledger.AsReadStore(raw, clock)
	for _, tc := range []struct {
		state ledger.State
		want  string
	}{
		{ledger.StateRejected, "k5 k3 k1"},
		{ledger.StatePendingApproval, "k6 k4 k2 k0"},
		{"", "k6 k5 k4 k3 k2 k1 k0"},
	} {
		got := ""
		f := ledger.Filter{Tenant: "t", State: tc.state, Limit: 2}
		for pages := 0; ; pages++ {
			p, err := st.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Records {
				if tc.state != "" && r.State != tc.state {
					t.Errorf("List(%s) returned %s in %s", tc.state, r.Key, r.State)
				}
				if got != "" {
					got += " "
				}
				got += r.Key
			}
			if p.Next == "" || pages > 10 {
				break
			}
			f.Cursor = p.Next
		}
		if got != tc.want {
			t.Errorf("List(state %q) in pages of 2 = %q; want %q", tc.state, got, tc.want)
		}
	}
	r, err := st.Get(ctx, ledger.ID{Tenant: "t", Layer: ledger.LayerClient, Tool: "pay", Key: "k1"})
	if err != nil || r.State != ledger.StateRejected || r.ErrorKind != ledger.KindApprovalExpired || !r.LeaseUntil.IsZero() {
		t.Errorf("Get(k1) = %+v, %v; want REJECTED, approval expired, no lease", r, err)
	}
	if stored, _ := raw.Get(ctx, r.ID); stored.State != ledger.StatePendingApproval {
		t.Errorf("stored k1 = %s; reading wrote it", stored.State)
	}
}

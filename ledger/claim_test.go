package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func TestClaimRequestValidate(t *testing.T) {
	ok := ledger.ClaimRequest{ID: ledger.ID{Tenant: "t", Tool: "pay", Key: "k"}, Fingerprint: "fp", Owner: "o"}
	for _, tc := range []struct {
		name    string
		edit    func(*ledger.ClaimRequest)
		wantErr bool
		is      error
	}{
		{"valid", func(*ledger.ClaimRequest) {}, false, nil},
		{"approval needs no owner", func(r *ledger.ClaimRequest) { r.Owner, r.NeedsApproval = "", true }, false, nil},
		{"bad key", func(r *ledger.ClaimRequest) { r.Key = "a b" }, true, ledger.ErrInvalidKey},
		{"bad tenant", func(r *ledger.ClaimRequest) { r.Tenant = "" }, true, ledger.ErrInvalidTenant},
		{"no fingerprint", func(r *ledger.ClaimRequest) { r.Fingerprint = "" }, true, nil},
		{"no owner", func(r *ledger.ClaimRequest) { r.Owner = "" }, true, nil},
		{"unknown reuse policy", func(r *ledger.ClaimRequest) { r.ReusePolicy = "sometimes" }, true, nil},
		{"negative lease", func(r *ledger.ClaimRequest) { r.Lease = -time.Second }, true, nil},
		{"negative retention", func(r *ledger.ClaimRequest) { r.Retention = -time.Second }, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			err := r.Validate()
			if (err != nil) != tc.wantErr || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Validate(%+v) = %v; want error %v (%v)", r, err, tc.wantErr, tc.is)
			}
		})
	}
}

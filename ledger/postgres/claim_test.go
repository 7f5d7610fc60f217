package postgres_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// A winner's record is built from the request rather than read back, so it
// must equal, field for field, the record the database then returns.
func TestClaimWonRecordEqualsStored(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("X", 3600))
	st := open(t, pgtest.Schema(t), &postgres.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  ledger.ClaimRequest
	}{
		{"plain", ledger.ClaimRequest{Fingerprint: "fp", Owner: "w", Arguments: json.RawMessage(`{"amount":42}`)}},
		{"no arguments", ledger.ClaimRequest{Fingerprint: "fp", Owner: "w"}},
		{"empty arguments", ledger.ClaimRequest{Fingerprint: "fp", Owner: "w", Arguments: json.RawMessage{}}},
		{"every field", ledger.ClaimRequest{Session: "s-1", Fingerprint: "fp2", Owner: "w2", Arguments: json.RawMessage(` {"b": [1, 2]} `),
			Lease: time.Minute, Retention: time.Hour, TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", ReusePolicy: ledger.Verify}},
		{"needs approval", ledger.ClaimRequest{Fingerprint: "fp", Arguments: json.RawMessage(`{}`), NeedsApproval: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.ID = ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "k-" + strings.ReplaceAll(tc.name, " ", "-")}
			c, err := st.Claim(ctx, req)
			if err != nil || !c.Won {
				t.Fatalf("Claim(%q) = {Won: %v}, %v; want a won claim", req.Key, c.Won, err)
			}
			got, err := st.Get(ctx, req.ID)
			if err != nil {
				t.Fatalf("Get(%q) = %v", req.Key, err)
			}
			if !reflect.DeepEqual(c.Record, got) {
				t.Errorf("Claim(%q) record = %+v; want the stored %+v", req.Key, c.Record, got)
			}
		})
	}
}

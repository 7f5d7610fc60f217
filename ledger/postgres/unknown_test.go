package postgres_test

import (
	"context"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

func TestCountUnknown(t *testing.T) {
	ctx := context.Background()
	st := open(t, pgtest.Schema(t), nil)
	count := func(want int64) {
		t.Helper()
		if n, err := st.CountUnknown(ctx); err != nil || n != want {
			t.Fatalf("CountUnknown = %d, %v; want %d", n, err, want)
		}
	}
	count(0)
	reach := func(tenant, key string, to ledger.State) ledger.ID {
		t.Helper()
		req := ledger.ClaimRequest{ID: ledger.ID{Tenant: tenant, Tool: "create_payment", Key: key},
			Fingerprint: "fp-a", Arguments: []byte(`{"amount":42}`), Owner: "owner-1"}
		c, err := st.Claim(ctx, req)
		if err != nil || !c.Won {
			t.Fatalf("Claim(%q) = %+v, %v; want a win", key, c, err)
		}
		if _, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing, To: to,
			Owner: "owner-1", Fence: c.Record.Fence, Result: []byte(`{"content":[]}`), ErrorKind: "ambiguous"}); err != nil {
			t.Fatalf("Transition(%q to %s) = %v", key, to, err)
		}
		return req.ID
	}
	first := reach("acme", "k1", ledger.StateUnknown)
	reach("globex", "k2", ledger.StateUnknown)
	reach("acme", "k3", ledger.StateSucceeded)
	count(2) // every tenant's
	if _, err := st.Transition(ctx, ledger.Transition{ID: first, From: ledger.StateUnknown, To: ledger.StateSucceeded,
		Result: []byte(`{"content":[]}`)}); err != nil {
		t.Fatalf("reconcile = %v", err)
	}
	count(1)
}

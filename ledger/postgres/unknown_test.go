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

func TestCountOpen(t *testing.T) {
	ctx := context.Background()
	st := open(t, pgtest.Schema(t), nil)
	claim := func(key string, approval bool) ledger.Claim {
		t.Helper()
		c, err := st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: "acme", Tool: "create_payment", Key: key},
			Fingerprint: "fp-a", Owner: "owner-1", NeedsApproval: approval})
		if err != nil || !c.Won {
			t.Fatalf("Claim(%q) = %+v, %v; want a win", key, c, err)
		}
		return c
	}
	unk := claim("k-unknown", false)
	if _, err := st.Transition(ctx, ledger.Transition{ID: unk.Record.ID, From: ledger.StateProcessing, To: ledger.StateUnknown,
		Owner: "owner-1", Fence: unk.Record.Fence, ErrorKind: "ambiguous"}); err != nil {
		t.Fatalf("Transition to UNKNOWN = %v", err)
	}
	claim("k-ask", true)
	claim("k-running", false)
	for _, c := range []struct {
		state ledger.State
		want  int64
	}{{ledger.StateUnknown, 1}, {ledger.StatePendingApproval, 1}} {
		n, oldest, err := st.CountOpen(ctx, c.state)
		if err != nil || n != c.want || oldest.IsZero() {
			t.Errorf("CountOpen(%s) = %d, %v, %v; want %d and the oldest's time", c.state, n, oldest, err, c.want)
		}
	}
	if _, _, err := st.CountOpen(ctx, ledger.StateProcessing); err == nil {
		t.Errorf("CountOpen(PROCESSING) = nil error; want one (no index bounds it)")
	}
}

package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Schema(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := ledger.ID{Tenant: "acme", Tool: "pay", Key: "k1"}
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o1", Arguments: json.RawMessage(`{"a":"é"}`)})
	if err != nil || !c.Won {
		t.Fatalf("Claim = %+v, %v", c, err)
	}
	c2, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: "o2"})
	if err != nil || c2.Won {
		t.Fatalf("Claim2 = %+v, %v", c2, err)
	}
	_, err = st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp2", Owner: "o2"})
	if !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("Claim3 err = %v", err)
	}
	done := make(chan *ledger.Record)
	go func() {
		r, err := st.Wait(ctx, id)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	r, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "o1", Result: json.RawMessage(`{"ok":1}`), AddAttempts: 1,
		Approval: &ledger.Approval{Decision: "approved", By: "me"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	w := <-done
	if w.State != ledger.StateSucceeded || string(w.Result) != `{"ok":1}` || string(w.Arguments) != `{"a":"é"}` {
		t.Fatalf("wait = %+v", w)
	}
	_, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "o1"})
	if !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatal(err)
	}
	p, err := st.List(ctx, ledger.Filter{Tenant: "acme"})
	if err != nil || len(p.Records) != 1 {
		t.Fatal(p, err)
	}
	n, err := st.ExpireLeases(ctx)
	t.Log(n, err)
	n, err = st.Purge(ctx, ledger.PurgeRequest{ExpiredBy: r.ExpiresAt})
	if n != 1 || err != nil {
		t.Fatal(n, err)
	}
}

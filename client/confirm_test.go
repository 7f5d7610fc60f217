package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

// answering is a Confirmer that counts how often a person was asked.
type answering struct {
	asked  atomic.Int32
	answer confirm.Answer
}

func (a *answering) Confirm(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
	a.asked.Add(1)
	return a.answer, nil
}

func askWrite() *confirm.Policy {
	return &confirm.Policy{Rules: []confirm.Rule{{Tool: "write", Action: confirm.Ask}, {Tool: "*", Action: confirm.Allow}}}
}

func TestConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		decision  string
		wantErr   error
		wantState ledger.State
		wantRuns  int
	}{
		{"approve once", ledger.DecisionApproved, nil, ledger.StateSucceeded, 1},
		{"deny", ledger.DecisionDenied, client.ErrDenied, ledger.StateDenied, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			person := &answering{answer: confirm.Answer{Decision: tc.decision, By: "test", Reason: "because"}}
			f := newFixture(t, nil, &client.Options{Policy: askWrite(), Confirmer: person})
			ctx := client.WithKey(context.Background(), "confirm-me")
			_, err := f.c.Call(ctx, write("a", 1))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Call = %v; want %v", err, tc.wantErr)
			}
			r := record(t, f.store, "write", "confirm-me")
			if r.State != tc.wantState || r.Approval == nil || r.Approval.Decision != tc.decision || r.Approval.By != "test" {
				t.Fatalf("record = %s approval %+v; want %s by test", r.State, r.Approval, tc.wantState)
			}
			if got := f.srv.TotalExecutions(); got != tc.wantRuns {
				t.Fatalf("TotalExecutions = %d; want %d", got, tc.wantRuns)
			}
			// A repeat is settled from the ledger and never asks again.
			_, err = f.c.Call(ctx, write("a", 1))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("repeat = %v; want %v", err, tc.wantErr)
			}
			if n := person.asked.Load(); n != 1 {
				t.Fatalf("asked %d times; want 1", n)
			}
		})
	}
}

func TestApproveForSessionIsRemembered(t *testing.T) {
	person := &answering{answer: confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "test"}}
	f := newFixture(t, nil, &client.Options{Session: "s1", Policy: askWrite(), Confirmer: person})
	for i, id := range []string{"a", "b", "c"} {
		if _, err := f.c.Call(context.Background(), write(id, float64(i))); err != nil {
			t.Fatalf("Call(%s) = %v", id, err)
		}
	}
	if n := person.asked.Load(); n != 1 {
		t.Fatalf("asked %d times; want 1 (approved for this session)", n)
	}
	// Another client in the same session, as another process would be,
	// finds the approval in the ledger.
	other := client.New(f.srv.ConnectInMemory(context.Background(), t, nil), f.store,
		&client.Options{Session: "s1", Policy: askWrite(), Confirmer: person, Retry: fastRetry()})
	if _, err := other.Call(context.Background(), write("d", 9)); err != nil {
		t.Fatalf("Call from second client = %v", err)
	}
	if n := person.asked.Load(); n != 1 {
		t.Fatalf("asked %d times; want 1 across clients of the session", n)
	}
	// A different session is asked again.
	third := client.New(f.srv.ConnectInMemory(context.Background(), t, nil), f.store,
		&client.Options{Session: "s2", Policy: askWrite(), Confirmer: person, Retry: fastRetry()})
	if _, err := third.Call(context.Background(), write("e", 9)); err != nil {
		t.Fatalf("Call from other session = %v", err)
	}
	if n := person.asked.Load(); n != 2 {
		t.Fatalf("asked %d times; want 2 (new session asks)", n)
	}
}

func TestNoConfirmerFailsClosed(t *testing.T) {
	f := newFixture(t, nil, &client.Options{Policy: askWrite()})
	_, err := f.c.Call(client.WithKey(context.Background(), "nobody"), write("a", 1))
	if !errors.Is(err, client.ErrRejected) || errors.Is(err, client.ErrDenied) {
		t.Fatalf("Call = %v; want ErrRejected (no one said no)", err)
	}
	r := record(t, f.store, "write", "nobody")
	if r.State != ledger.StateRejected || r.ErrorMessage == "" {
		t.Fatalf("record = %s %q; want REJECTED with the reason", r.State, r.ErrorMessage)
	}
	if got := f.srv.TotalExecutions(); got != 0 {
		t.Fatalf("TotalExecutions = %d; want 0", got)
	}
}

func TestPolicyDenyRecordsDecision(t *testing.T) {
	deny := &confirm.Policy{Rules: []confirm.Rule{{Tool: "write", Action: confirm.Deny}}}
	f := newFixture(t, nil, &client.Options{Policy: deny})
	if _, err := f.c.Call(client.WithKey(context.Background(), "no"), write("a", 1)); !errors.Is(err, client.ErrDenied) {
		t.Fatalf("Call = %v; want ErrDenied", err)
	}
	if r := record(t, f.store, "write", "no"); r.Approval == nil || r.Approval.By != "policy" {
		t.Fatalf("approval = %+v; want by policy", r.Approval)
	}
}

func TestUnansweredDenialDoesNotBlockALaterAnswer(t *testing.T) {
	f := newFixture(t, nil, &client.Options{Session: "s-retry", Policy: askWrite()})
	if _, err := f.c.Call(context.Background(), write("a", 1)); !errors.Is(err, client.ErrRejected) {
		t.Fatalf("Call without confirmer = %v; want ErrRejected", err)
	}
	// The same call again, now with someone to ask (as `agentctl call --yes`).
	person := &answering{answer: confirm.Answer{Decision: ledger.DecisionApproved, By: "test"}}
	ctx := client.WithConfirmer(context.Background(), person)
	o, err := f.c.Call(ctx, write("a", 1))
	if err != nil {
		t.Fatalf("Call with confirmer = %v", err)
	}
	if o.Replayed || person.asked.Load() != 1 || f.srv.TotalExecutions() != 1 {
		t.Fatalf("replayed %v asked %d executions %d; want a fresh approved execution", o.Replayed, person.asked.Load(), f.srv.TotalExecutions())
	}
}

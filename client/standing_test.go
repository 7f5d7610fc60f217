package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

// "Approve for this session" answered at a prompt (any Confirmer: the
// terminal, the host's elicitation) is bound like a queued approval: to
// the policy version and an expiry recorded when it is given, and to the
// tenant, session and tool of the call.
func TestSessionApprovalAtAPromptIsBound(t *testing.T) {
	sessionAnswer := confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "terminal:carol"}
	ask := func(p *confirm.Policy) { p.Rules[0].Expiry = 2 * time.Hour }
	tests := []struct {
		name string
		// then is the second call: another client on the same ledger
		// (nil: the same client), and how the clock moves first.
		opts    *client.Options
		advance time.Duration
		// wantAsked: the second call asks again.
		wantAsked bool
	}{
		{name: "same session, same policy", wantAsked: false},
		{name: "same session, another process", opts: &client.Options{Policy: askWriteWith(ask), Session: "s1"}, wantAsked: false},
		{name: "new policy version", opts: &client.Options{Policy: askWriteWith(ask, func(p *confirm.Policy) { p.DistinctApprover = true }), Session: "s1"}, wantAsked: true},
		{name: "another session", opts: &client.Options{Policy: askWriteWith(ask), Session: "s2"}, wantAsked: true},
		{name: "another tenant", opts: &client.Options{Policy: askWriteWith(ask), Session: "s1", Tenant: "other"}, wantAsked: true},
		{name: "just before the expiry", advance: 2*time.Hour - time.Second, wantAsked: false},
		{name: "expired", advance: 2 * time.Hour, wantAsked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			person := &answering{answer: sessionAnswer}
			f := newQueueFixture(t, ledgers[0], &client.Options{Policy: askWriteWith(ask), Session: "s1", Confirmer: person})
			given := f.clock.Now()
			if _, err := f.c.Call(client.WithKey(context.Background(), "first"), write("a", 1)); err != nil {
				t.Fatalf("first call = %v", err)
			}
			r := record(t, f.caller, "write", "first")
			ap := r.Approval
			if ap == nil || ap.Decision != ledger.DecisionApprovedSession || ap.PolicyVersion != askWriteWith(ask).Version() ||
				ap.Fingerprint != r.Fingerprint || !ap.Expires.Equal(given.Add(2*time.Hour)) {
				t.Fatalf("approval = %+v; want approved_session bound to policy %s, the fingerprint, expiring at %v (the rule's expiry)",
					ap, askWriteWith(ask).Version(), given.Add(2*time.Hour))
			}

			c := f.c
			second := &answering{answer: confirm.Answer{Decision: ledger.DecisionDenied, By: "terminal:carol", Reason: "asked again"}}
			if tc.opts != nil {
				o := *tc.opts
				o.Confirmer = second
				c = f.client(t, &o)
			} else {
				person.answer = second.answer
			}
			f.clock.Advance(tc.advance)
			_, err := c.Call(client.WithKey(context.Background(), "second"), write("b", 2))
			asked := second.asked.Load() > 0 || person.asked.Load() > 1
			if asked != tc.wantAsked {
				t.Fatalf("second call asked = %v (err %v); want %v", asked, err, tc.wantAsked)
			}
			wantRuns := 2
			if tc.wantAsked {
				wantRuns = 1
				if !errors.Is(err, client.ErrDenied) {
					t.Errorf("second call = %v; want the new answer, ErrDenied", err)
				}
			} else if err != nil {
				t.Errorf("second call = %v; want it run under the session approval", err)
			} else {
				// The call the standing approval let through records it.
				got := record(t, f.caller, "write", "second").Approval
				if got == nil || got.Via != ledger.ViaStanding || got.By != ap.By || got.Standing == nil ||
					got.Standing.Key != "first" || !got.Standing.Given.Equal(ap.At) || !got.Expires.Equal(ap.Expires) {
					t.Errorf("second call's approval = %+v; want the standing approval of first (%+v)", got, ap)
				}
			}
			if n := f.srv.TotalExecutions(); n != wantRuns {
				t.Errorf("TotalExecutions = %d; want %d", n, wantRuns)
			}
		})
	}
}

// A session approval given to a queued call ends with a new policy
// version too.
func TestQueuedSessionApprovalEndsWithThePolicy(t *testing.T) {
	f := newQueueFixture(t, ledgers[0], &client.Options{Policy: queueWrite(), Session: "s1"})
	ce := f.queued(t, client.WithKey(context.Background(), "order-20"), write("a", 1))
	f.decide(t, ce.Key, client.Decision{Approve: true, ForSession: true, By: "bob"})
	if _, err := f.c.Call(client.WithKey(context.Background(), "order-20"), write("a", 1)); err != nil {
		t.Fatalf("approved call = %v", err)
	}
	if _, err := f.c.Call(client.WithKey(context.Background(), "order-21"), write("b", 2)); err != nil {
		t.Fatalf("call under the session approval = %v; want it run", err)
	}
	changed := f.client(t, &client.Options{Policy: queueWrite(func(p *confirm.Policy) { p.ApprovalExpiry = time.Hour }), Session: "s1"})
	if _, err := changed.Call(client.WithKey(context.Background(), "order-22"), write("c", 3)); !errors.Is(err, client.ErrAwaitingApproval) {
		t.Fatalf("call under a new policy version = %v; want ErrAwaitingApproval", err)
	}
	if n := f.srv.TotalExecutions(); n != 2 {
		t.Fatalf("TotalExecutions = %d; want 2", n)
	}
}

// A session approval recorded without a policy version (by a client from
// before approvals were bound) approves nothing later.
func TestUnboundSessionApprovalStandsForNothing(t *testing.T) {
	person := &answering{answer: confirm.Answer{Decision: ledger.DecisionApproved, By: "terminal:carol"}}
	f := newQueueFixture(t, ledgers[0], &client.Options{Policy: askWrite(), Session: "s1", Confirmer: person})
	st := f.caller
	ctx := context.Background()
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: "old"}, Session: "s1",
		Fingerprint: "fp-old", Owner: "old#1@host", Lease: time.Minute})
	if err != nil || !cl.Won {
		t.Fatalf("Claim = %+v, %v", cl, err)
	}
	if _, err := st.Transition(ctx, ledger.Transition{ID: cl.Record.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
		Owner: cl.Record.Owner, Fence: cl.Record.Fence, Result: []byte(`{"content":[]}`),
		Approval: &ledger.Approval{Decision: ledger.DecisionApprovedSession, By: "terminal:carol", At: f.clock.Now()}}); err != nil {
		t.Fatalf("Transition = %v", err)
	}
	if _, err := f.c.Call(client.WithKey(ctx, "new"), write("a", 1)); err != nil {
		t.Fatalf("Call = %v", err)
	}
	if n := person.asked.Load(); n != 1 {
		t.Fatalf("asked %d times; want 1: an unbound session approval must not stand", n)
	}
}

func askWriteWith(opts ...func(*confirm.Policy)) *confirm.Policy {
	p := askWrite()
	for _, o := range opts {
		o(p)
	}
	return p
}

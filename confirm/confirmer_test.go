package confirm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// counting is a Confirmer fake: it counts calls and answers with fn.
type counting struct {
	calls atomic.Int32
	fn    func() (Answer, error)
}

func (c *counting) Confirm(ctx context.Context, req Request) (Answer, error) {
	c.calls.Add(1)
	return c.fn()
}

func TestStatic(t *testing.T) {
	tests := []struct {
		name    string
		s       Static
		want    Answer
		wantErr bool
	}{
		{"yes", Static{Answer{Decision: ledger.DecisionApproved, Reason: "--yes"}},
			Answer{Decision: ledger.DecisionApproved, By: "static", Reason: "--yes"}, false},
		{"keeps by", Static{Answer{Decision: ledger.DecisionDenied, By: "policy"}},
			Answer{Decision: ledger.DecisionDenied, By: "policy"}, false},
		{"empty decision never approves", Static{}, Answer{}, true},
		{"made-up decision", Static{Answer{Decision: "ok"}}, Answer{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.Confirm(context.Background(), Request{Tool: "x"})
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Static%+v.Confirm = %+v, %v; want %+v, error %v", tc.s, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestChain(t *testing.T) {
	approve := Answer{Decision: ledger.DecisionApproved, By: "second"}
	unavailable := func() (Answer, error) { return Answer{}, ErrNoConfirmer }
	boom := errors.New("boom")

	t.Run("falls through to the first available", func(t *testing.T) {
		first := &counting{fn: unavailable}
		second := &counting{fn: func() (Answer, error) { return approve, nil }}
		third := &counting{fn: func() (Answer, error) { return Answer{}, boom }}
		got, err := Chain(nil, first, second, third).Confirm(context.Background(), Request{})
		if err != nil || got != approve {
			t.Errorf("Chain.Confirm = %+v, %v; want %+v", got, err, approve)
		}
		if first.calls.Load() != 1 || second.calls.Load() != 1 || third.calls.Load() != 0 {
			t.Errorf("calls = %d, %d, %d; want 1, 1, 0", first.calls.Load(), second.calls.Load(), third.calls.Load())
		}
	})
	t.Run("other errors stop the chain", func(t *testing.T) {
		next := &counting{fn: func() (Answer, error) { return approve, nil }}
		_, err := Chain(&counting{fn: func() (Answer, error) { return Answer{}, boom }}, next).Confirm(context.Background(), Request{})
		if !errors.Is(err, boom) || next.calls.Load() != 0 {
			t.Errorf("Chain.Confirm = %v with %d later calls; want boom and none", err, next.calls.Load())
		}
	})
	t.Run("nobody to ask", func(t *testing.T) {
		_, err := Chain(&counting{fn: unavailable}).Confirm(context.Background(), Request{})
		if !errors.Is(err, ErrNoConfirmer) {
			t.Fatalf("Chain.Confirm = %v; want ErrNoConfirmer", err)
		}
		// A Go program's answer speaks of the library's options, not of
		// agentctl's flags.
		for _, want := range []string{"Options.Confirmer", "Options.Policy"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ErrNoConfirmer = %q; want it to name %s", err, want)
			}
		}
		if strings.Contains(err.Error(), "--") {
			t.Errorf("ErrNoConfirmer = %q; want no command-line flag in a library's text", err)
		}
	})
}

func TestApproval(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	a := Answer{Decision: ledger.DecisionApprovedSession, By: "terminal:alice", Reason: "ok"}
	got := a.Approval(at)
	want := &ledger.Approval{Decision: ledger.DecisionApprovedSession, By: "terminal:alice", At: at.UTC(), Reason: "ok"}
	if *got != *want || got.At.Location() != time.UTC {
		t.Errorf("Approval(%v) = %+v; want %+v in UTC", at, got, want)
	}
	for d, want := range map[string]bool{
		ledger.DecisionApproved: true, ledger.DecisionApprovedSession: true, ledger.DecisionDenied: false, "": false,
	} {
		if got := (Answer{Decision: d}).Approved(); got != want {
			t.Errorf("Answer{Decision: %q}.Approved() = %v; want %v", d, got, want)
		}
	}
}

func sampleRequest() Request {
	return Request{
		Tenant:    "acme",
		Session:   "s-1",
		Server:    "payments",
		Tool:      "create_payment",
		Key:       "order-42",
		Arguments: json.RawMessage(`{"amount":1250,"currency":"EUR","card_token":"[REDACTED]"}`),
		Hints:     &Hints{Destructive: ptr(false), OpenWorld: ptr(true)},
		Earlier: []*ledger.Record{{
			ID:        ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "order-41"},
			State:     ledger.StateSucceeded,
			Attempts:  2,
			CreatedAt: time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC),
			Approval:  &ledger.Approval{Decision: ledger.DecisionApproved, By: "terminal:alice"},
		}},
		Why: `default policy: tool "*pay*" -> ask`,
	}
}

func TestSummary(t *testing.T) {
	s := sampleRequest().Summary()
	for _, want := range []string{
		`create_payment on server "payments" needs your confirmation`,
		"why:", `"*pay*"`,
		"tenant:      acme", "session:     s-1", "key:         order-42",
		`"amount": 1250`, `"card_token": "[REDACTED]"`,
		"writes, not destructive, not idempotent, reaches outside systems (as the server claims)",
		"earlier:     1", "2026-03-01T09:30:00Z SUCCEEDED key order-41, 2 attempt(s), approved by terminal:alice",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Summary() lacks %q:\n%s", want, s)
		}
	}

	t.Run("escapes terminal control", func(t *testing.T) {
		r := Request{Tool: "pay\x1b[2J\x1b[Hnow", Server: "evil\u202e", Arguments: json.RawMessage(`{"note":"a\u001b[31m\u202eb"}`)}
		s := r.Summary()
		if strings.ContainsAny(s, "\x1b\u202e") {
			t.Errorf("Summary() = %q; want no raw escape or bidi characters", s)
		}
		if !strings.Contains(s, `"pay\x1b[2J\x1b[Hnow"`) {
			t.Errorf("Summary() = %q; want the tool name quoted with escapes", s)
		}
	})
	t.Run("large arguments say what is cut", func(t *testing.T) {
		big := `{"items":[` + strings.Repeat(`"xxxxxxxxxx",`, 400) + `"end"]}`
		s := Request{Tool: "t", Arguments: json.RawMessage(big)}.Summary()
		if !strings.Contains(s, "more bytes not shown") || len(s) > maxShownArgs+1024 {
			t.Errorf("Summary() of %d argument bytes is %d bytes without a cut notice", len(big), len(s))
		}
	})
	t.Run("unannotated", func(t *testing.T) {
		s := Request{Tool: "t"}.Summary()
		if !strings.Contains(s, "annotations: none") || !strings.Contains(s, "arguments:   none") {
			t.Errorf("Summary() = %q; want no annotations and no arguments stated", s)
		}
	})
}

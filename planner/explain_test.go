package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
)

func TestExplain(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 15, 0, 0, time.FixedZone("CET", 3600))
	rec := func(s ledger.State) *ledger.Record {
		return &ledger.Record{
			ID: ledger.ID{Tenant: "acme", Tool: "send_mail", Key: "k1.abc"}, State: s, Attempts: 1,
			CreatedAt: at, UpdatedAt: at.Add(time.Minute),
		}
	}
	approved := rec(ledger.StatePendingApproval)
	approved.Approval = &ledger.Approval{Decision: ledger.DecisionApproved, By: "ann", At: at}
	denied := rec(ledger.StateDenied)
	denied.Approval = &ledger.Approval{Decision: ledger.DecisionDenied, By: "ann", Reason: "not\tto\nbob"}
	cases := []struct {
		name   string
		v      planner.Verdict
		want   []string
		absent []string
	}{
		{name: "new", v: planner.Verdict{Decision: planner.Run},
			want: []string{"new"}, absent: []string{"ledger_status", "Do not"}},
		{name: "new over a retryable record", v: planner.Verdict{Decision: planner.Run, Record: rec(ledger.StateRetryable)},
			want: []string{"k1.abc", "never reached the tool", "same key", "2026-03-01T08:15:00Z"}, absent: []string{"Do not"}},
		{name: "replay succeeded", v: planner.Verdict{Decision: planner.Replay, Record: rec(ledger.StateSucceeded)},
			want: []string{"send_mail", "k1.abc", "succeeded", "2026-03-01T08:15:00Z", "Do not issue it again", `ledger_status with key "k1.abc"`}},
		{name: "replay failed", v: planner.Verdict{Decision: planner.Replay, Record: rec(ledger.StateFailed)},
			want: []string{"reported an error", "Do not issue", "ledger_status"}},
		{name: "in flight", v: planner.Verdict{Decision: planner.InFlight, Record: rec(ledger.StateProcessing)},
			want: []string{"in progress", "Do not issue", "ledger_status", "2026-03-01T08:15:00Z"}},
		// A model told "do not issue it again" would never make the call
		// that runs a queued call once approved: the ledger's one text for
		// PENDING_APPROVAL says to call again once approved (as the client
		// and mcp-go answers do).
		{name: "awaiting approval", v: planner.Verdict{Decision: planner.InFlight, Record: rec(ledger.StatePendingApproval)},
			want: []string{"awaits a person's approval", "Nothing has run", "once it says approved", "same call again", `ledger_status with key "k1.abc"`}, absent: []string{"Do not issue"}},
		{name: "approved, not run yet", v: planner.Verdict{Decision: planner.InFlight, Record: approved},
			want: []string{"approved by ann", "has not run", "same call again", "runs once", "ledger_status"}, absent: []string{"Do not issue", "awaits"}},
		{name: "unknown", v: planner.Verdict{Decision: planner.Unknown, Record: rec(ledger.StateUnknown)},
			want: []string{"outcome is unknown", "may or may not", "person", "Do not issue", "ledger_status"}},
		{name: "denied", v: planner.Verdict{Decision: planner.Denied, Record: denied},
			want: []string{"denied on 2026-03-01T08:16:00Z", "(reason: not to bob)", "Do not issue", "ledger_status"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planner.Explain(tc.v)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Explain(%v) = %q; want it to contain %q", tc.v.Decision, got, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("Explain(%v) = %q; want no %q", tc.v.Decision, got, a)
				}
			}
			if strings.Contains(got, "\n") {
				t.Errorf("Explain(%v) = %q; want one paragraph", tc.v.Decision, got)
			}
		})
	}
}

func TestExplainRecordLongReason(t *testing.T) {
	r := &ledger.Record{
		ID: ledger.ID{Tool: "pay", Key: "k"}, State: ledger.StateDenied,
		Approval: &ledger.Approval{Reason: strings.Repeat("é", 500)},
	}
	got := planner.ExplainRecord(r)
	if n := strings.Count(got, "é"); n != 200 || !strings.Contains(got, "…") {
		t.Fatalf("ExplainRecord(long reason) kept %d runes of the reason; want 200 and an ellipsis", n)
	}
	if planner.ExplainRecord(nil) == "" {
		t.Fatal("ExplainRecord(nil) is empty; want a not-found text")
	}
}

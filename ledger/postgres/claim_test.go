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
		{"needs approval", ledger.ClaimRequest{Fingerprint: "fp", Owner: "w", Arguments: json.RawMessage(`{}`), NeedsApproval: true}},
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

// A transition returns only the columns it did not write itself, so the
// record it returns must equal, field for field, the stored one.
func TestTransitionRecordEqualsStored(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)
	st := open(t, pgtest.Schema(t), &postgres.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	approval := &ledger.Approval{Decision: ledger.DecisionApproved, By: "ops", At: now.Truncate(time.Second), Reason: "ok"}
	P, S, F, R, U := ledger.StateProcessing, ledger.StateSucceeded, ledger.StateFailed, ledger.StateRetryable, ledger.StateUnknown
	A, D, J := ledger.StatePendingApproval, ledger.StateDenied, ledger.StateRejected
	// step is a transition made under the record's current fence when it
	// leaves a leased state or is fenced (a late result or re-send from
	// UNKNOWN by the owner that lost its lease).
	type step struct {
		ledger.Transition
		fenced bool
	}
	for _, tc := range []struct {
		name     string
		approval bool // claim PENDING_APPROVAL
		steps    []step
	}{
		{"succeeded with result", false, []step{
			{Transition: ledger.Transition{From: P, To: S, Owner: "w", Result: json.RawMessage(`{"content":[]}`), AddAttempts: 1}}}},
		{"failed with error", false, []step{
			{Transition: ledger.Transition{From: P, To: F, Owner: "w", ErrorKind: "tool", ErrorMessage: "boom", AddAttempts: 1}}}},
		{"retryable", false, []step{
			{Transition: ledger.Transition{From: P, To: R, Owner: "w", ErrorKind: "transport", ErrorMessage: "reset"}}}},
		{"refused", false, []step{
			{Transition: ledger.Transition{From: P, To: J, Owner: "w", ErrorKind: ledger.KindRefused, ErrorMessage: "payee: want string"}}}},
		{"unknown re-sent", false, []step{
			{Transition: ledger.Transition{From: P, To: U, Owner: "w", ErrorKind: "transport", ErrorMessage: "reset"}},
			{Transition: ledger.Transition{From: U, To: P, Owner: "w2", Lease: time.Minute}},
			{Transition: ledger.Transition{From: P, To: S, Owner: "w2", Result: json.RawMessage(`"done"`), Compacted: true, AddAttempts: 1}}}},
		{"unknown re-sent under its fence", false, []step{
			{Transition: ledger.Transition{From: P, To: U, Owner: "w"}},
			{Transition: ledger.Transition{From: U, To: P, Owner: "w", Lease: time.Minute}, fenced: true}}},
		{"unknown resolved", false, []step{
			{Transition: ledger.Transition{From: P, To: U, Owner: "w", ErrorKind: "timeout", ErrorMessage: "no answer", AddAttempts: 1}},
			{Transition: ledger.Transition{From: U, To: S, Result: json.RawMessage{}}}}},
		{"late result", false, []step{
			{Transition: ledger.Transition{From: P, To: U, Owner: "w", ErrorKind: "timeout", ErrorMessage: "no answer"}},
			{Transition: ledger.Transition{From: U, To: S, Owner: "w", Result: json.RawMessage(`{"id":1}`), AddAttempts: 1}, fenced: true}}},
		{"unknown without text", false, []step{
			{Transition: ledger.Transition{From: P, To: U, Owner: "w", Result: json.RawMessage(`{"partial":true}`)}},
			{Transition: ledger.Transition{From: U, To: F}}}},
		{"approved", true, []step{
			{Transition: ledger.Transition{From: A, To: P, Owner: "w", Approval: approval}},
			{Transition: ledger.Transition{From: P, To: S, Owner: "w", Result: json.RawMessage(`{}`), AddAttempts: 1}}}},
		{"denied", true, []step{
			{Transition: ledger.Transition{From: A, To: D, Owner: "w", Approval: &ledger.Approval{Decision: ledger.DecisionDenied, By: "ops", At: now, Reason: "no"},
				ErrorKind: "denied", ErrorMessage: "denied by ops"}}}},
		{"no answer", true, []step{
			{Transition: ledger.Transition{From: A, To: J, Owner: "w", ErrorKind: ledger.KindNoAnswer, ErrorMessage: "no terminal"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "t-" + strings.ReplaceAll(tc.name, " ", "-")}
			req := ledger.ClaimRequest{ID: id, Session: "s", Fingerprint: "fp", Owner: "w", Arguments: json.RawMessage(`{"a":1}`),
				TraceID: "tr", SpanID: "sp", NeedsApproval: tc.approval}
			c, err := st.Claim(ctx, req)
			if err != nil || !c.Won {
				t.Fatalf("Claim(%q) = {Won: %v}, %v; want a won claim", id.Key, c.Won, err)
			}
			cur := c.Record
			for _, s := range tc.steps {
				tr := s.Transition
				tr.ID = id
				if tr.From.Waiting() || s.fenced {
					tr.Fence = cur.Fence
				}
				rec, err := st.Transition(ctx, tr)
				if err != nil {
					t.Fatalf("Transition(%s -> %s) = %v", tr.From, tr.To, err)
				}
				got, err := st.Get(ctx, id)
				if err != nil {
					t.Fatalf("Get(%q) = %v", id.Key, err)
				}
				if !reflect.DeepEqual(rec, got) {
					t.Errorf("Transition(%s -> %s) record = %+v; want the stored %+v", tr.From, tr.To, rec, got)
				}
				cur = got
			}
		})
	}
}

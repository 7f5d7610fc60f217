package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// An "approve for this session" given at the terminal prompt lasts while
// the policy file says the same: a changed policy asks again.
func TestSessionApprovalEndsWithAChangedPolicy(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "policy.json")
	writePolicy := func(note string) {
		t.Helper()
		doc := `{"rules": [{"tool": "create_payment", "action": "ask", "note": "` + note + `"}, {"tool": "*", "action": "allow"}]}`
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy("money leaves the account")
	policy := []string{"MCPLEDGER_POLICY=" + path}
	payAs := func(stdin *string, key, payee string) outcome {
		return e.runEnv(stdin, policy, "call", "--server", e.server, "--session", "agent-9", "--key", key,
			"create_payment", "amount_cents=7", "currency=EUR", "payee="+payee)
	}
	const prompt = "needs your confirmation"

	payAs(answer("2\n"), "p-1", "acme").wantExit(t, exitOK)
	show := e.run(nil, "--json", "ledger", "show", "p-1")
	recs := jsonLines[ledger.Record](t, show.stdout)
	if len(recs) != 1 || recs[0].Approval == nil || recs[0].Approval.Decision != ledger.DecisionApprovedSession ||
		recs[0].Approval.PolicyVersion == "" || recs[0].Approval.Expires.IsZero() {
		t.Fatalf("ledger show p-1 = %+v; want an approval for the session bound to a policy version and an expiry", recs)
	}
	next := payAs(nil, "p-2", "globex")
	next.wantExit(t, exitOK)
	if strings.Contains(next.stderr, prompt) {
		t.Errorf("the next call under the same policy asked again: %q", next.stderr)
	}
	// The call the standing approval let through records it: who gave
	// it, when, until when, and on which call.
	p2 := jsonLines[ledger.Record](t, e.run(nil, "--json", "ledger", "show", "p-2").stdout)
	if len(p2) != 1 || !standsOn(p2[0].Approval, recs[0]) {
		t.Fatalf("ledger show p-2 approval = %+v; want the standing approval of p-1 (%+v)", p2[0].Approval, recs[0].Approval)
	}
	if text := e.run(nil, "ledger", "show", "--wide", "p-2").stdout; !strings.Contains(text, "standing approval given on create_payment key p-1") {
		t.Errorf("ledger show p-2 = %q; want the standing approval named", text)
	}
	if exp := e.run(nil, "ledger", "export").stdout; !strings.Contains(exp, `"standing":{"layer":"client","tool":"create_payment","key":"p-1"`) {
		t.Errorf("the export does not carry p-2's standing approval: %s", exp)
	}

	// The policy file changes: the approval given under the old one
	// stands no more, and with no one to answer nothing runs.
	writePolicy("money leaves the account; reviewed")
	payAs(nil, "p-3", "initech").wantExit(t, exitUsage)
	if a, b, c := e.paymentsFor("p-1"), e.paymentsFor("p-2"), e.paymentsFor("p-3"); a != 1 || b != 1 || c != 0 {
		t.Errorf("payments for p-1, p-2, p-3 = %d, %d, %d; want 1, 1, 0", a, b, c)
	}
}

// standsOn reports whether ap is the approval a call gets from the
// standing approval on src.
func standsOn(ap *ledger.Approval, src ledger.Record) bool {
	s := src.Approval
	return ap != nil && s != nil && ap.Decision == ledger.DecisionApproved && ap.Via == ledger.ViaStanding &&
		ap.By == s.By && ap.By == osAccount() && ap.Expires.Equal(s.Expires) && ap.PolicyVersion == s.PolicyVersion &&
		ap.Standing != nil && ap.Standing.Key == src.Key && ap.Standing.Tool == src.Tool && ap.Standing.Given.Equal(s.At)
}

// ledger approve --session --for D stores D, prints what it stored, and
// every call it lets through records it; --for alone is refused.
func TestSessionApprovalFor(t *testing.T) {
	e := newE2E(t)
	policy := e.queuePolicy(`"approvalExpiry": "4h", `)
	call := func(key, payee string) outcome {
		return e.runEnv(nil, []string{policy}, "call", "--server", e.server, "--session", "s", "--key", key,
			"create_payment", "amount_cents=7", "currency=EUR", "payee="+payee)
	}
	call("s-1", "acme").wantExit(t, exitAwaiting)
	e.runEnv(nil, []string{policy}, "ledger", "approve", "s-1", "--for", "1h").
		wantExit(t, exitUsage, "--for 1h0m0s sets how long a session approval stands", "--session")
	if r := jsonLines[ledger.Record](t, e.run(nil, "--json", "ledger", "show", "s-1").stdout); len(r) != 1 || r[0].Approval != nil {
		t.Fatalf("after a refused --for: s-1 = %+v; want no approval", r)
	}
	before := time.Now()
	ok := e.runEnv(nil, []string{policy}, "ledger", "approve", "s-1", "--session", "--for", "1h")
	ok.wantExit(t, exitOK)
	s1 := jsonLines[ledger.Record](t, e.run(nil, "--json", "ledger", "show", "s-1").stdout)
	if len(s1) != 1 || s1[0].Approval == nil {
		t.Fatalf("s-1 = %+v; want its approval", s1)
	}
	exp := s1[0].Approval.Expires
	if exp.Before(before.Add(time.Hour-time.Minute)) || exp.After(time.Now().Add(time.Hour)) {
		t.Errorf("s-1's session approval stands until %v; want an hour from %v", exp, before)
	}
	if !strings.Contains(ok.stdout, "until "+timeText(exp)) {
		t.Errorf("approve --for 1h printed %q; want the stored expiry %s", ok.stdout, timeText(exp))
	}
	call("s-1", "acme").wantExit(t, exitOK)
	call("s-2", "globex").wantExit(t, exitOK)
	s2 := jsonLines[ledger.Record](t, e.run(nil, "--json", "ledger", "show", "s-2").stdout)
	if len(s2) != 1 || !standsOn(s2[0].Approval, s1[0]) {
		t.Fatalf("s-2 approval = %+v; want the standing approval of s-1", s2[0].Approval)
	}
	if a, b := e.paymentsFor("s-1"), e.paymentsFor("s-2"); a != 1 || b != 1 {
		t.Errorf("payments for s-1, s-2 = %d, %d; want 1, 1", a, b)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

	// The policy file changes: the approval given under the old one
	// stands no more, and with no one to answer nothing runs.
	writePolicy("money leaves the account; reviewed")
	payAs(nil, "p-3", "initech").wantExit(t, exitUsage)
	if a, b, c := e.paymentsFor("p-1"), e.paymentsFor("p-2"), e.paymentsFor("p-3"); a != 1 || b != 1 || c != 0 {
		t.Errorf("payments for p-1, p-2, p-3 = %d, %d, %d; want 1, 1, 0", a, b, c)
	}
}

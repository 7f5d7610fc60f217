package confirm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
)

func TestQueuePolicy(t *testing.T) {
	p, err := confirm.Parse([]byte(`{
	  "whenNoOneCanBeAsked": "queue", "distinctApprover": true, "approvalExpiry": "2h",
	  "rules": [
	    {"tool": "wire_*", "action": "queue", "expiry": "30m"},
	    {"tool": "pay_*", "action": "queue"}
	  ]}`))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	for _, tc := range []struct {
		tool   string
		want   confirm.Verdict
		expiry time.Duration
	}{
		{"wire_money", confirm.Queue, 30 * time.Minute},
		{"pay_invoice", confirm.Queue, 2 * time.Hour},
		{"delete_user", confirm.Ask, 2 * time.Hour},
	} {
		if got := p.Decide(confirm.Tool{Name: tc.tool}); got != tc.want {
			t.Errorf("Decide(%s) = %s; want %s", tc.tool, got, tc.want)
		}
		if got := p.Expiry(confirm.Tool{Name: tc.tool}); got != tc.expiry {
			t.Errorf("Expiry(%s) = %v; want %v", tc.tool, got, tc.expiry)
		}
	}
	if !p.QueuesUnasked() || !p.DistinctApprover {
		t.Errorf("QueuesUnasked = %t, DistinctApprover = %t; want both true", p.QueuesUnasked(), p.DistinctApprover)
	}
	if confirm.Default().QueuesUnasked() || confirm.Default().Expiry(confirm.Tool{Name: "x"}) != confirm.DefaultApprovalExpiry {
		t.Errorf("the default policy queues, or its expiry is not %v", confirm.DefaultApprovalExpiry)
	}
}

func TestPolicyVersion(t *testing.T) {
	a, err := confirm.Parse([]byte(`{"rules": [{"tool": "pay_*", "action": "queue"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	same, err := confirm.Parse([]byte(`{ "rules": [ {"action": "queue", "tool": "pay_*"} ] }`))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := confirm.Parse([]byte(`{"rules": [{"tool": "pay_*", "action": "ask"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Version() != same.Version() {
		t.Errorf("Version of the same rules spelled differently: %s and %s; want equal", a.Version(), same.Version())
	}
	if a.Version() == changed.Version() || a.Version() == confirm.Default().Version() {
		t.Errorf("Version %s did not change with the rules", a.Version())
	}
	var nilPolicy *confirm.Policy
	if nilPolicy.Version() != confirm.Default().Version() {
		t.Errorf("nil policy version %s; want the default's %s", nilPolicy.Version(), confirm.Default().Version())
	}
}

func TestQueuePolicyErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"whenNoOneCanBeAsked": "later"}`, `"later" is not queue or reject`},
		{`{"approvalExpiry": "soon"}`, `"soon" is not a positive duration`},
		{`{"rules": [{"tool": "x", "action": "queue", "expiry": "-1h"}]}`, `rules[0].expiry: "-1h" is not a positive duration`},
		{`{"distinctApprover": "yes"}`, `distinctApprover: want`},
	} {
		_, err := confirm.Parse([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v; want an error containing %q", tc.doc, err, tc.want)
		}
	}
}

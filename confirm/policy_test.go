package confirm

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func ptr(b bool) *bool { return &b }

func TestDefaultPolicy(t *testing.T) {
	readOnly := &Hints{ReadOnly: ptr(true)}
	destructive := &Hints{Destructive: ptr(true)}
	safeWrite := &Hints{Destructive: ptr(false)}
	titleOnly := &Hints{Title: "Weather"} // destructive by the spec's default
	tests := []struct {
		name   string
		policy *Policy
		tool   Tool
		want   Verdict
	}{
		{"payment asks by name", nil, Tool{Name: "create_payment", Server: "payments"}, Ask},
		{"payment asks with the defaults value", Default(), Tool{Name: "create_payment", Server: "payments"}, Ask},
		{"camel case name", nil, Tool{Name: "DeleteUser"}, Ask},
		{"transfer", nil, Tool{Name: "transfer_funds"}, Ask},
		{"send", nil, Tool{Name: "send_message"}, Ask},
		{"publish", nil, Tool{Name: "publish_post"}, Ask},
		{"email", nil, Tool{Name: "email_customer"}, Ask},
		{"refund", nil, Tool{Name: "refund"}, Ask},
		{"remove", nil, Tool{Name: "remove_member"}, Ask},
		{"plain read runs", nil, Tool{Name: "get_payment"}, Allow},
		{"read verb on a payment runs", nil, Tool{Name: "list_payments"}, Allow},
		{"read verb with a dash", nil, Tool{Name: "get-payment"}, Allow},
		{"camel case read is not known as a read", nil, Tool{Name: "getPayment"}, Ask},
		{"post as a noun runs", nil, Tool{Name: "get_posts"}, Allow},
		{"postgres is not post", nil, Tool{Name: "postgres_stats"}, Allow},
		{"post as a verb asks", nil, Tool{Name: "post_message"}, Ask},
		{"reading email runs", nil, Tool{Name: "search_emails"}, Allow},
		{"untrusted destructive read verb asks", nil, Tool{Name: "get_and_reset", Hints: &Hints{Destructive: ptr(true)}}, Ask},
		{"destructive hint asks even untrusted", nil, Tool{Name: "reset_cache", Hints: destructive}, Ask},
		{"spec default destructive asks", nil, Tool{Name: "weather", Hints: titleOnly}, Ask},
		{"declared non-destructive write runs", nil, Tool{Name: "set_flag", Hints: safeWrite}, Allow},
		{"untrusted read-only claim does not excuse a delete", nil,
			Tool{Name: "delete_everything", Server: "evil", Hints: readOnly}, Ask},
		{"trusted read-only claim counts", &Policy{Rules: Default().Rules, Trusted: []string{"docs*"}},
			Tool{Name: "delete_draft_preview", Server: "docs-server", Hints: readOnly}, Allow},
		{"trusted destructive still asks", &Policy{Rules: Default().Rules, Trusted: []string{"docs"}},
			Tool{Name: "archive", Server: "docs", Hints: destructive}, Ask},
		{"empty policy asks", &Policy{}, Tool{Name: "get_payment"}, Ask},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.policy.Decide(tc.tool); got != tc.want {
				_, why := tc.policy.Explain(tc.tool)
				t.Errorf("Decide(%+v) = %v (%s); want %v", tc.tool, got, why, tc.want)
			}
		})
	}
}

func TestRules(t *testing.T) {
	p := &Policy{
		Trusted: []string{"fs"},
		Rules: []Rule{
			{Tool: "create_payment", Server: "sandbox", Action: Allow},
			{Tool: "*", Server: "prod-*", When: &Conditions{Destructive: ptr(true)}, Action: Deny},
			{Tool: "*", When: &Conditions{Annotated: ptr(false)}, Action: Ask},
			{Tool: "*", When: &Conditions{ReadOnly: ptr(true), OpenWorld: ptr(false)}, Action: Allow},
			{Tool: "*", Action: Deny},
		},
	}
	closedRead := &Hints{ReadOnly: ptr(true), OpenWorld: ptr(false)}
	openRead := &Hints{ReadOnly: ptr(true)}
	tests := []struct {
		name string
		tool Tool
		want Verdict
	}{
		{"server qualified allow", Tool{Name: "create_payment", Server: "sandbox"}, Allow},
		{"same tool other server", Tool{Name: "create_payment", Server: "live"}, Ask},
		{"untrusted destructive denied", Tool{Name: "x", Server: "prod-eu", Hints: &Hints{}}, Deny},
		{"unannotated asks", Tool{Name: "x", Server: "prod-eu"}, Ask},
		{"trusted closed read", Tool{Name: "read_file", Server: "fs", Hints: closedRead}, Allow},
		{"trusted open read falls to deny", Tool{Name: "fetch", Server: "fs", Hints: openRead}, Deny},
		{"untrusted closed read cannot allow", Tool{Name: "read_file", Server: "other", Hints: closedRead}, Deny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Decide(tc.tool); got != tc.want {
				_, why := p.Explain(tc.tool)
				t.Errorf("Decide(%+v) = %v (%s); want %v", tc.tool, got, why, tc.want)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	v, why := Default().Explain(Tool{Name: "create_payment"})
	if v != Ask || !strings.Contains(why, `"*pay*"`) || !strings.Contains(why, "default policy") {
		t.Errorf("Explain(create_payment) = %v, %q; want ask naming the *pay* default rule", v, why)
	}
	v, why = (&Policy{}).Explain(Tool{Name: "x"})
	if v != Ask || !strings.Contains(why, "no policy rule matched") {
		t.Errorf("Explain on an empty policy = %v, %q; want ask with no rule matched", v, why)
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything/at all", true},
		{"", "", true},
		{"", "x", false},
		{"get_*", "get_payment", true},
		{"get_*", "list_payments", false},
		{"*pay*", "create_payment", true},
		{"*PAY*", "CreatePayment", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a?c", "aéc", true},
		{"*a*b*c", "xaxbxbxc", true},
		{"*a*b*c", "xaxbxbx", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"github.com/*", "github.com/acme/srv", true},
		{"**", "x", true},
		{"?", "", false},
		{"get_*|list_*", "list_x", true},
		{"get_*|list_*", "put_x", false},
		{"a||b", "", true},
		{"|", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"/"+tc.name, func(t *testing.T) {
			if got := Match(tc.pattern, tc.name); got != tc.want {
				t.Errorf("Match(%q, %q) = %v; want %v", tc.pattern, tc.name, got, tc.want)
			}
		})
	}
}

// FuzzMatch checks Match against a regular expression built from the glob.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"*pay*", "create_payment"}, {"a?c*", "abcd"}, {"*a*b", "aab"}, {"?é*", "xé"}, {"get_*|*pay*", "repay"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) || len(pattern) > 64 {
			t.Skip()
		}
		var re strings.Builder
		re.WriteString(`(?s)\A(?:`)
		for _, r := range strings.ToLower(pattern) {
			switch r {
			case '*':
				re.WriteString(".*")
			case '?':
				re.WriteString(".")
			case '|':
				re.WriteString("|")
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString(`)\z`)
		want := regexp.MustCompile(re.String()).MatchString(strings.ToLower(name))
		if got := Match(pattern, name); got != want {
			t.Errorf("Match(%q, %q) = %v; want %v (regexp %s)", pattern, name, got, want, re.String())
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	p := Default()
	tools := []Tool{
		{Name: "create_payment", Server: "payments"},
		{Name: "get_payment", Server: "payments", Hints: &Hints{ReadOnly: ptr(true)}},
		{Name: "list_invoices_for_customer_account", Server: "billing"},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Decide(tools[i%len(tools)])
	}
}

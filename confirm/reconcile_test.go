package confirm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const probePolicy = `{"version": 1,
 "rules": [{"tool": "create_payment", "action": "allow"}],
 "reconcile": [
   {"tool": "create_payment", "probe": "find_payment",
    "arguments": {"idempotency_key": "{{.Key}}", "payee": "{{.Arguments.payee}}", "at": ["{{.Arguments.amount_cents}}", 7, true, null]},
    "absent": "not_run", "quiet": "30s"},
   {"tool": "send_*", "probe": "get_message", "arguments": {"ref": "msg-{{.Key}}"},
    "absent": "ask", "found": "structured.status in ['sent', 'queued']"}
 ]}`

func TestProbeFor(t *testing.T) {
	p, err := Parse([]byte(probePolicy))
	if err != nil {
		t.Fatalf("Parse = %v; want a policy", err)
	}
	tests := []struct {
		tool, probe string
		quiet       time.Duration
		asks        bool
	}{
		{"create_payment", "find_payment", 30 * time.Second, false},
		{"send_mail", "get_message", DefaultQuiet, true},
		{"get_payment", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			pr := p.ProbeFor(tc.tool)
			if tc.probe == "" {
				if pr != nil {
					t.Fatalf("ProbeFor(%q) = %s; want none", tc.tool, pr.Probe)
				}
				return
			}
			if pr == nil || pr.Probe != tc.probe || pr.QuietPeriod() != tc.quiet || pr.Asks() != tc.asks {
				t.Fatalf("ProbeFor(%q) = %+v; want probe %s, quiet %v, asks %v", tc.tool, pr, tc.probe, tc.quiet, tc.asks)
			}
		})
	}
	if (*Policy)(nil).ProbeFor("x") != nil || Default().ProbeFor("create_payment") != nil {
		t.Error("ProbeFor on the default policy found a probe; want none")
	}
}

func TestProbeArguments(t *testing.T) {
	p, err := Parse([]byte(probePolicy))
	if err != nil {
		t.Fatal(err)
	}
	pr := p.ProbeFor("create_payment")
	got, err := pr.Arguments("K-1", json.RawMessage(`{"payee":"ACME \"Ltd\"","amount_cents":1.50e2}`))
	if err != nil {
		t.Fatalf("Arguments = %v", err)
	}
	want := `{"at":["1.50e2",7,true,null],"idempotency_key":"K-1","payee":"ACME \"Ltd\""}`
	if string(got) != want {
		t.Errorf("Arguments = %s; want %s", got, want)
	}
	// A field the call does not have is an error, never an empty value a
	// probe would look up.
	if _, err := pr.Arguments("K-1", json.RawMessage(`{"amount_cents":1}`)); err == nil || !strings.Contains(err.Error(), "payee") {
		t.Errorf("Arguments without payee = %v; want an error naming payee", err)
	}
	if _, err := pr.Arguments("K-1", json.RawMessage(`[1]`)); err == nil {
		t.Error("Arguments of an array = nil error; want one")
	}
	got, err = p.ProbeFor("send_x").Arguments("K/2", nil)
	if err != nil || string(got) != `{"ref":"msg-K/2"}` {
		t.Errorf("Arguments = %s, %v; want {\"ref\":\"msg-K/2\"}", got, err)
	}
}

func TestProbeJudge(t *testing.T) {
	p, err := Parse([]byte(probePolicy))
	if err != nil {
		t.Fatal(err)
	}
	convention, cond := p.ProbeFor("create_payment"), p.ProbeFor("send_mail")
	tests := []struct {
		name    string
		pr      *Probe
		result  string
		isError bool
		want    bool
		wantErr bool
	}{
		{"a result is found", convention, `{"content":[]}`, false, true, false},
		{"isError is absent", convention, `{"content":[],"isError":true}`, true, false, false},
		{"condition holds", cond, `{"content":[],"structuredContent":{"status":"sent"}}`, false, true, false},
		{"condition fails", cond, `{"content":[],"structuredContent":{"status":"bounced"}}`, false, false, false},
		{"condition over isError decides alone", cond, `{"content":[],"structuredContent":{"status":"queued"},"isError":true}`, true, true, false},
		// A condition that cannot be evaluated knows nothing: unknown, not absent.
		{"no structured content", cond, `{"content":[{"type":"text","text":"none"}]}`, false, false, true},
		{"not an object", cond, `[]`, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.pr.Judge(json.RawMessage(tc.result), tc.isError)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Judge(%s) = %v, %v; want %v (error: %v)", tc.result, got, err, tc.want, tc.wantErr)
			}
		})
	}
	text, err := Parse([]byte(`{"reconcile":[{"tool":"t","probe":"p","arguments":{},"found":"text contains 'exists' && !isError"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := text.ProbeFor("t").Judge(json.RawMessage(`{"content":[{"type":"text","text":"it exists"}]}`), false)
	if err != nil || !got {
		t.Errorf("Judge over text = %v, %v; want true", got, err)
	}
}

func TestParseReconcileErrors(t *testing.T) {
	tests := []struct {
		name, reconcile, want string
	}{
		{"not an array", `{}`, "reconcile: want an array"},
		{"unknown field", `[{"tool":"t","probe":"p","arguments":{},"quite":"1s"}]`, `reconcile[0].quite: unknown field "quite"`},
		{"no tool", `[{"probe":"p","arguments":{}}]`, `reconcile[0]: missing "tool"`},
		{"no probe", `[{"tool":"t","arguments":{}}]`, `reconcile[0]: missing "probe"`},
		{"probe a glob", `[{"tool":"t","probe":"find_*","arguments":{}}]`, `reconcile[0].probe: "find_*" is not a tool name`},
		{"no arguments", `[{"tool":"t","probe":"p"}]`, `reconcile[0]: missing "arguments"`},
		{"arguments not an object", `[{"tool":"t","probe":"p","arguments":"{{.Key}}"}]`, "reconcile[0].arguments: want an object"},
		{"bad template", `[{"tool":"t","probe":"p","arguments":{"k":"{{.Key"}}]`, "reconcile[0].arguments.k: not a template"},
		{"unknown template name", `[{"tool":"t","probe":"p","arguments":{"k":"{{.Keys}}"}}]`, "reconcile[0].arguments.k: "},
		{"bad absent", `[{"tool":"t","probe":"p","arguments":{},"absent":"failed"}]`, `reconcile[0].absent: "failed" is not not_run or ask`},
		{"bad quiet", `[{"tool":"t","probe":"p","arguments":{},"quiet":"soon"}]`, `reconcile[0].quiet: "soon" is not a positive duration`},
		{"bad condition", `[{"tool":"t","probe":"p","arguments":{},"found":"structured.status =="}]`, "reconcile[0].found: not a condition"},
		{"condition not boolean", `[{"tool":"t","probe":"p","arguments":{},"found":"text"}]`, "reconcile[0].found: not a condition"},
		{"condition unknown name", `[{"tool":"t","probe":"p","arguments":{},"found":"status == 1"}]`, "reconcile[0].found: not a condition"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"version":1,"reconcile":` + tc.reconcile + `}`))
			if !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(reconcile %s) = %v; want an invalid policy error containing %q", tc.reconcile, err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse(reconcile %s) = %q; want one line", tc.reconcile, err)
			}
		})
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/verify"
)

// G12 against the payments example, slow after its commit so that verify
// can kill it once the payment exists: with its reconciler the re-sent
// key gets the payment back; without one, or with one that lies, G12
// fails and says what to fix.
func TestVerifyUnknownResolves(t *testing.T) {
	for _, c := range []struct {
		name, fault string
		pass        bool
		want        string
	}{
		{"reconciler", "", true, "resolved by reconciler (payments)"},
		{"missing", ",reconciler=missing", false, "register a reconciler for create_payment"},
		{"lie", ",reconciler=lie", false, "fix it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newE2E(t)
			server := fmt.Sprintf("'%s' -db '%s' -fault handler-committed=sleep:5s%s", e.payments, e.payDB, c.fault)
			o := e.run(nil, append(e.verifyArgs("--server", server), "--only", "G12")...)
			var got []verify.Result
			for _, r := range jsonLines[verify.Result](t, o.stdout) {
				if r.ID != "" { // the last line of a failed run is its error
					got = append(got, r)
				}
			}
			if len(got) != 1 || got[0].ID != "G12" {
				t.Fatalf("verify --only G12 printed:\n%s\n%s", o.stdout, o.stderr)
			}
			r := got[0]
			t.Logf("G12 %s: %s; %s", r.Status, r.Figure, r.Reason)
			if c.pass {
				o.wantExit(t, exitOK)
				if r.Status != verify.Pass || !strings.Contains(r.Figure, c.want) || !strings.Contains(r.Figure, "1 execution") {
					t.Errorf("G12 = %+v; want pass, %q and 1 execution", r, c.want)
				}
				return
			}
			o.wantExit(t, exitFailed, "G12 unknown resolves")
			if r.Status != verify.Fail || !strings.Contains(r.Reason, c.want) {
				t.Errorf("G12 = %+v; want fail naming %q", r, c.want)
			}
		})
	}
}

// Over HTTP verify cannot kill the server: it cancels the call once the
// payment exists, and the handler ends UNKNOWN with its context.
func TestVerifyUnknownResolvesHTTP(t *testing.T) {
	for _, c := range []struct {
		name, fault string
		pass        bool
	}{
		{"reconciler", "handler-committed=sleep:5s", true},
		{"missing", "handler-committed=sleep:5s,reconciler=missing", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newE2E(t)
			url := e.startPaymentsHTTP("-fault", c.fault)
			o := e.run(nil, append(e.verifyArgs("--url", url), "--only", "G12")...)
			r := jsonLines[verify.Result](t, o.stdout)[0]
			t.Logf("G12 %s: %s; %s", r.Status, r.Figure, r.Reason)
			if c.pass {
				o.wantExit(t, exitOK)
				if r.Status != verify.Pass || !strings.Contains(r.Figure, "call cancelled after the effect: resolved by reconciler") {
					t.Errorf("G12 = %+v; want pass, resolved by the reconciler after a cancelled call", r)
				}
				return
			}
			o.wantExit(t, exitFailed, "G12 unknown resolves")
			if r.Status != verify.Fail || !strings.Contains(r.Reason, "register a reconciler for create_payment") {
				t.Errorf("G12 = %+v; want fail naming the remedy", r)
			}
		})
	}
}

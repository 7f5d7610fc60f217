package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/verify"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// verifyPay is the payment every verify run against the payments example
// makes, again and again.
const verifyPay = `{"amount_cents":100,"currency":"EUR","payee":"verify"}`

// verifyArgs are the arguments of agentctl verify against the payments
// example of e, counting payments with its -count.
func (e *e2e) verifyArgs(upstream ...string) []string {
	return append(append([]string{"--json", "verify"}, upstream...),
		"--tool", "create_payment", "--args", verifyPay,
		"--count-cmd", fmt.Sprintf("'%s' -db '%s' -count {key}", e.payments, e.payDB))
}

// wantAllHold checks a verify --json run: exit 0, every guarantee passed
// (skipped only where want allows), and the figures logged.
//
// An ID in skipped with a "?" after it ("G12?") may pass or be skipped:
// whether it can run depends on the timing of the server under test.
func wantAllHold(t *testing.T, o outcome, skipped ...string) {
	t.Helper()
	o.wantExit(t, exitOK)
	got := jsonLines[verify.Result](t, o.stdout)
	if len(got) != len(verify.Guarantees()) {
		t.Fatalf("verify printed %d guarantees; want %d:\n%s", len(got), len(verify.Guarantees()), o.stdout)
	}
	for i, r := range got {
		want := verify.Pass
		if slices.Contains(skipped, r.ID) || (slices.Contains(skipped, r.ID+"?") && r.Status == verify.Skip) {
			want = verify.Skip
		}
		if r.ID != verify.Guarantees()[i][0] || r.Status != want || r.Name == "" || r.Does == "" {
			t.Errorf("guarantee %d = %+v; want %s %s", i, r, verify.Guarantees()[i][0], want)
		}
		if r.Status == verify.Pass && r.Figure == "" {
			t.Errorf("%s passed without a figure", r.ID)
		}
		t.Logf("%s %-19s %s %s", r.ID, r.Name, r.Status, r.Figure)
	}
}

// wantScratchGone fails when a verify run left records outside the layer
// of the server guard (the payments example's own records of its calls).
func wantScratchGone(t *testing.T, path string) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tn := range []string{"default", "verify"} {
		p, err := st.List(t.Context(), ledger.Filter{Tenant: tn})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) > 0 {
			t.Errorf("tenant %s holds %d records after verify; want none", tn, len(p.Records))
		}
	}
}

func TestVerifyPaymentsStdio(t *testing.T) {
	e := newE2E(t)
	o := e.run(nil, e.verifyArgs("--server", e.server)...)
	// A payment answers at once, so G12 can seldom cut it off after its
	// effect and then skips (TestVerifyUnknownResolves gives it a slow
	// one); on a busy machine it may, and then it must pass.
	wantAllHold(t, o, "G12?", "G13")
	wantScratchGone(t, filepath.Join(e.dir, "ledger.db"))
}

func TestVerifyPaymentsHTTP(t *testing.T) {
	e := newE2E(t)
	url := e.startPaymentsHTTP()
	// An HTTP server is not ours to kill: G6 checks the ledger's owners
	// only, and says so.
	o := e.run(nil, e.verifyArgs("--url", url)...)
	wantAllHold(t, o, "G12?", "G13")
	if !strings.Contains(o.stdout, "not ours to kill") {
		t.Errorf("G6 over HTTP does not say the server was not killed:\n%s", o.stdout)
	}
}

// One PostgreSQL database holds both ledgers: verify's scratch tenant and
// the payments guard's records, each in its own layer.
func TestVerifyPaymentsPostgres(t *testing.T) {
	url := pgtest.Schema(t)
	e := newE2E(t)
	server := fmt.Sprintf("'%s' -db '%s' -ledger '%s'", e.payments, e.payDB, url)
	for _, up := range [][]string{{"--server", server}, {"--url", e.startPaymentsHTTP("-ledger", url)}} {
		t.Run(up[0][2:], func(t *testing.T) {
			o := e.runEnv(nil, []string{"MCPLEDGER_LEDGER=" + url}, e.verifyArgs(up...)...)
			// A single server: G13 passes with its note.
			wantAllHold(t, o, "G12?")
			if g13 := jsonLines[verify.Result](t, o.stdout)[12]; !strings.Contains(g13.Figure, "single server") {
				t.Errorf("G13 on one PostgreSQL server = %+v; want a pass that says it is a single server", g13)
			}
		})
	}
}

// Without a server, the built-in test server (not key-aware) checks the
// ledger alone: the server-side guarantees are skipped with the reason.
func TestVerifyBuiltinServer(t *testing.T) {
	path, env := ledgerEnv(t)
	o := inProcess(t, env, nil, "--json", "verify")
	wantAllHold(t, o, "G2", "G12", "G13")
	r := jsonLines[verify.Result](t, o.stdout)[1]
	if !strings.Contains(r.Reason, "not key-aware") {
		t.Errorf("G2 skipped with %q; want the reason", r.Reason)
	}
	wantScratchGone(t, path)

	table := inProcess(t, env, nil, "--wide", "verify", "--only", "G1,G8") // a row a line
	table.wantExit(t, exitOK)
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "G1 ") || !strings.Contains(lines[1], "pass") || !strings.HasPrefix(lines[2], "G8 ") {
		t.Errorf("verify --only G1,G8 printed:\n%s\nwant a header and the rows of G1 and G8", table.stdout)
	}

	inProcess(t, env, nil, "verify", "--only", "G99").wantExit(t, exitUsage, "G99")
	inProcess(t, env, nil, "verify", "--url", "http://127.0.0.1:1/mcp").wantExit(t, exitUsage, "--tool")
}

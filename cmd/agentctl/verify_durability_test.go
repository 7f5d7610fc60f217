package main

import (
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/verify"
)

// G13 against the Patroni pair of .ci/patroni.sh: a synchronous standby
// holds, an asynchronous one fails with the remedy named.
func TestVerifyDurabilityFailoverPair(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		exit   int
		status verify.Status
		says   string
	}{
		{mode: "sync", exit: exitOK, status: verify.Pass, says: "sync"},
		{mode: "async", exit: exitFailed, status: verify.Fail, says: "synchronous_standby_names"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			h := newHAPair(t, tc.mode)
			_, env := ledgerEnv(t)
			env["MCPLEDGER_LEDGER"] = h.dsn
			o := inProcess(t, env, nil, "--json", "verify", "--only", "G13")
			o.wantExit(t, tc.exit)
			got := jsonLines[verify.Result](t, o.stdout)
			if len(got) == 0 || got[0].ID != "G13" || got[0].Status != tc.status || !strings.Contains(got[0].Figure+got[0].Reason, tc.says) {
				t.Fatalf("verify --only G13 on the %s pair = %+v; want %s naming %q", tc.mode, got, tc.status, tc.says)
			}
			t.Logf("%s pair: G13 %s: %s %s", tc.mode, got[0].Status, got[0].Figure, got[0].Reason)
		})
	}
	// The pair is left synchronous for the tests after this one.
	newHAPair(t, "sync")
}

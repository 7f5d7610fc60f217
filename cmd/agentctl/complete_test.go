package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Keys, tools and sessions tab-complete from the ledger; a ledger that is
// not there offers nothing and is not created.
func TestCompleteFromLedger(t *testing.T) {
	path, env := ledgerEnv(t)
	seedLedger(t, path, time.Now(),
		seedRecord{tool: "create_payment", key: "order-1", session: "conv-a", state: ledger.StateSucceeded, result: okResult},
		seedRecord{tool: "create_payment", key: "order-2", session: "conv-b", state: ledger.StateUnknown},
		seedRecord{tool: "refund", key: "other-3", session: "batch", state: ledger.StateSucceeded, result: okResult},
	)
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"ledger", "show", "ord"}, []string{"order-1", "order-2"}, []string{"other-3"}},
		{[]string{"ledger", "reconcile", "oth"}, []string{"other-3"}, []string{"order-1"}},
		{[]string{"ledger", "show", "order-1", "--tool", "cr"}, []string{"create_payment"}, []string{"refund"}},
		{[]string{"ledger", "list", "--session", "conv"}, []string{"conv-a", "conv-b"}, []string{"batch"}},
		{[]string{"call", "re"}, []string{"refund"}, []string{"create_payment"}},
	} {
		o := inProcess(t, env, nil, append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(o.stdout, "\n")
		for _, w := range tc.want {
			if !slicesContains(lines, w) {
				t.Errorf("__complete %v offered %q; want %s", tc.args, o.stdout, w)
			}
		}
		for _, w := range tc.not {
			if slicesContains(lines, w) {
				t.Errorf("__complete %v offered %q; want no %s", tc.args, o.stdout, w)
			}
		}
	}
	missing := path + ".none"
	o := inProcess(t, map[string]string{"MCPLEDGER_LEDGER": missing, "HOME": env["HOME"]}, nil, "__complete", "ledger", "show", "o")
	if o.code != exitOK || strings.Contains(o.stdout, "order") {
		t.Errorf("__complete on a missing ledger: exit %d, %q; want nothing offered", o.code, o.stdout)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("completion created the ledger %s", missing)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

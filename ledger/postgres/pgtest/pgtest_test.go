package pgtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// TestURLRule runs TestURLRuleChild in a child process with the variable
// unset: a developer's machine skips with the reason, CI fails.
func TestURLRule(t *testing.T) {
	cases := []struct {
		name     string
		ci       string
		wantFail bool
		wantText string
	}{
		{"developer machine skips", "", false, "--- SKIP: TestURLRuleChild"},
		{"CI fails", "true", true, "--- FAIL: TestURLRuleChild"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestURLRuleChild$", "-test.v")
			cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", pgtest.Env+"=", "CI="+tc.ci)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.wantFail {
				t.Errorf("child with CI=%q: failed = %v (%v); want %v\n%s", tc.ci, failed, err, tc.wantFail, out)
			}
			if !strings.Contains(string(out), tc.wantText) || !strings.Contains(string(out), pgtest.Env+" is unset") {
				t.Errorf("child with CI=%q said:\n%s\nwant %q and the reason", tc.ci, out, tc.wantText)
			}
		})
	}
}

func TestURLRuleChild(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") != "1" {
		t.Skip("run by TestURLRule in a child process")
	}
	pgtest.URL(t)
	t.Error("URL returned with the variable unset")
}

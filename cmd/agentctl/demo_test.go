package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func TestDemo(t *testing.T) {
	tests := []struct {
		name       string
		ownLedger  bool // --ledger names a file that outlives the run
		jsonOutput bool
	}{
		{name: "temporary ledger, table", jsonOutput: false},
		{name: "own ledger, json", ownLedger: true, jsonOutput: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := proxyEnv(t)
			own := filepath.Join(t.TempDir(), "own.db")
			args := []string{"demo"}
			if tc.ownLedger {
				args = append(args, "--ledger", own)
			}
			if tc.jsonOutput {
				args = append(args, "--json")
			}
			cmd := proxyCommand(t, env, args...)
			var out, errb proxyLog
			cmd.Stdout, cmd.Stderr = &out, &errb
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("agentctl %s = %v; want exit 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("demo took %v; want under 30 s", took)
			}
			if !tc.jsonOutput {
				for _, want := range []string{"lost", "stalls", "again", "crashes", "reused", "OPERATION", "4 operations", "one per operation"} {
					if !strings.Contains(out.String(), want) {
						t.Errorf("demo output does not mention %q:\n%s", want, out.String())
					}
				}
				return
			}
			sum := jsonLines[demoSummary](t, out.String())
			if len(sum) != 1 {
				t.Fatalf("demo --json printed %d objects; want 1", len(sum))
			}
			s := sum[0]
			if s.Executions != s.Operations || s.Operations != 4 {
				t.Errorf("demo: %d executions for %d operations; want 4 and 4", s.Executions, s.Operations)
			}
			if s.UnknownFound != 1 || s.Reconciled != 1 || s.Refused != 1 {
				t.Errorf("demo: unknown %d, reconciled %d, refused %d; want 1 each", s.UnknownFound, s.Reconciled, s.Refused)
			}
			for _, r := range s.Rows {
				if r.Executions != 1 || r.State != ledger.StateSucceeded {
					t.Errorf("row %q: %d executions, %s; want 1, SUCCEEDED", r.Name, r.Executions, r.State)
				}
				if r.Attempts < 1 || r.Replays < 1 {
					t.Errorf("row %q: %d attempts, %d replays; want at least 1 each", r.Name, r.Attempts, r.Replays)
				}
			}
			if tc.ownLedger {
				// The records stay in the named ledger.
				st, err := sqlite.Open(context.Background(), own, nil)
				if err != nil {
					t.Fatalf("sqlite.Open(%q) = %v", own, err)
				}
				defer st.Close()
				for _, r := range s.Rows {
					rec, err := st.Get(context.Background(), ledger.ID{Tenant: "default", Tool: "create_payment", Key: r.Key})
					if err != nil || rec.State != ledger.StateSucceeded {
						t.Errorf("record %s in --ledger = %v, %v; want SUCCEEDED", r.Key, rec, err)
					}
				}
			}
		})
	}
}

// The summary's JSON names are what scripts read.
func TestDemoSummaryJSON(t *testing.T) {
	b, err := json.Marshal(demoSummary{Operations: 4, Executions: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"operations":4`, `"executions":4`, `"attempts"`, `"replays"`, `"unknownFound"`, `"reconciled"`, `"rows"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("demo JSON %s lacks %s", b, want)
		}
	}
}

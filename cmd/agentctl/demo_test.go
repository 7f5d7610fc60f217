package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// TestDemo runs the demo once as a user would (one run takes seconds):
// with --json the story goes to stderr and the table to stdout as one
// object, and --ledger keeps the records.
func TestDemo(t *testing.T) {
	own := filepath.Join(t.TempDir(), "own.db")
	args := []string{"demo", "--ledger", own, "--json"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard only
	defer cancel()
	cmd := proxyCommandContext(ctx, t, proxyEnv(t), args...)
	var out, errb proxyLog
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("agentctl %s = %v; want exit 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	for _, want := range []string{"lost", "stalls", "again", "crashes", "reused", "UNKNOWN", "reconciler"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("demo story does not mention %q:\n%s", want, errb.String())
		}
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
	if len(s.Rows) != s.Operations {
		t.Errorf("demo: %d rows for %d operations", len(s.Rows), s.Operations)
	}
	st, err := sqlite.Open(context.Background(), own, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%q) = %v", own, err)
	}
	defer st.Close()
	for _, r := range s.Rows {
		if r.Executions != 1 || r.State != ledger.StateSucceeded {
			t.Errorf("row %q: %d executions, %s; want 1, SUCCEEDED", r.Name, r.Executions, r.State)
		}
		if r.Attempts < 1 || r.Replays < 1 {
			t.Errorf("row %q: %d attempts, %d replays; want at least 1 each", r.Name, r.Attempts, r.Replays)
		}
		// The records stay in the ledger --ledger named.
		rec, err := st.Get(context.Background(), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: r.Key})
		if err != nil || rec.State != ledger.StateSucceeded || rec.Attempts != r.Attempts {
			t.Errorf("record %s in --ledger = %+v, %v; want SUCCEEDED after %d attempts", r.Key, rec, err, r.Attempts)
		}
	}
}

// A person who says no to every payment: nothing is paid, the story goes
// on to the end, and the table adds up.
func TestDemoAllDenied(t *testing.T) {
	agentctl, _ := binaries(t)
	var out, story strings.Builder
	a := &app{io: stdio{In: strings.NewReader(""), Out: &out, Err: &story}, getenv: func(string) string { return "" }, tenant: "default", json: true}
	no := confirm.Static{Answer: confirm.Answer{Decision: ledger.DecisionDenied, By: "test", Reason: "not today"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.runDemo(ctx, false, agentctl, no); err != nil {
		t.Fatalf("runDemo with every payment denied = %v; want the story to end\n%s", err, story.String())
	}
	for _, want := range []string{"denied (not today by test)", "refused before anything was sent"} {
		if !strings.Contains(story.String(), want) {
			t.Errorf("story does not say %q:\n%s", want, story.String())
		}
	}
	s := jsonLines[demoSummary](t, out.String())[0]
	if s.Operations != 0 || s.Executions != 0 || s.UnknownFound != 0 {
		t.Errorf("all denied: %d operations, %d executions, %d unknown; want 0 each", s.Operations, s.Executions, s.UnknownFound)
	}
	for _, r := range s.Rows {
		if r.State != ledger.StateDenied || r.Executions != 0 {
			t.Errorf("row %q: %s, %d executions; want DENIED, 0", r.Name, r.State, r.Executions)
		}
	}
}

// The table printer's text, for a summary like the demo's.
func TestDemoTable(t *testing.T) {
	var out strings.Builder
	d := &demo{a: &app{io: stdio{Out: &out}, getenv: func(string) string { return "" }}, out: &out}
	err := d.printTable(&demoSummary{Operations: 1, Executions: 1, Attempts: 2, Replays: 1, UnknownFound: 1, Reconciled: 1,
		Rows: []demoOp{{Name: "lost answer", Key: "k-1", Attempts: 2, Executions: 1, Replays: 1, State: ledger.StateSucceeded, Reconciled: true}}})
	if err != nil {
		t.Fatalf("printTable = %v", err)
	}
	for _, want := range []string{"OPERATION", "lost answer", "k-1", "SUCCEEDED*", "* reconciled", "1 operations", "UNKNOWN found 1, reconciled 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table does not show %q:\n%s", want, out.String())
		}
	}
	// A payment more than operations is a failed demo, not a table.
	err = d.printTable(&demoSummary{Operations: 1, Executions: 2})
	if err == nil || !strings.Contains(err.Error(), "2 payments for 1 operations") {
		t.Errorf("printTable(2 payments, 1 operation) = %v; want an error", err)
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

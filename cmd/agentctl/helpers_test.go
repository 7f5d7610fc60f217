package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// outcome is what one agentctl run left behind.
type outcome struct {
	code           int
	stdout, stderr string
}

// inProcess runs agentctl's run function with an environment of exactly env
// (nothing leaks in from the test's own environment).
func inProcess(t *testing.T, env map[string]string, stdin io.Reader, args ...string) outcome {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, stdio{In: stdin, Out: &out, Err: &errb}, func(k string) string { return env[k] })
	return outcome{code: code, stdout: out.String(), stderr: errb.String()}
}

// wantExit fails unless the run ended with code; a failing run must print
// exactly one line on stderr, and that line must contain every hint.
func (o outcome) wantExit(t *testing.T, code int, hints ...string) {
	t.Helper()
	if o.code != code {
		t.Fatalf("exit code = %d; want %d\nstdout: %s\nstderr: %s", o.code, code, o.stdout, o.stderr)
	}
	if code == exitOK {
		return
	}
	lines := strings.Split(strings.TrimRight(o.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "agentctl: ") {
		t.Errorf("stderr does not end with one agentctl error line: %q", o.stderr)
	}
	for _, h := range hints {
		if !strings.Contains(last, h) {
			t.Errorf("error line %q does not mention %q", last, h)
		}
	}
}

// jsonLines decodes stdout as JSON lines into values of T.
func jsonLines[T any](t *testing.T, stdout string) []T {
	t.Helper()
	var out []T
	for line := range strings.Lines(stdout) {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("stdout line %q is not one JSON object: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// seedRecord describes a record to put in a ledger before a test.
type seedRecord struct {
	tenant, tool, key, session string
	state                      ledger.State
	result                     string // a CallToolResult JSON for SUCCEEDED/FAILED
	args                       string // the arguments' JSON; a small default when empty
}

// seedLedger creates a SQLite ledger at path holding recs, with every
// timestamp taken from now.
func seedLedger(t *testing.T, path string, now time.Time, recs ...seedRecord) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("sqlite.Open(%q) = %v", path, err)
	}
	defer st.Close()
	for _, r := range recs {
		tenant := r.tenant
		if tenant == "" {
			tenant = "default"
		}
		id := ledger.ID{Layer: ledger.LayerClient, Tenant: tenant, Tool: r.tool, Key: r.key}
		doc := json.RawMessage(`{"amount_cents":1250,"payee":"acme"}`)
		if r.args != "" {
			doc = json.RawMessage(r.args)
		}
		fp, err := args.Fingerprint(doc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := st.Claim(ctx, ledger.ClaimRequest{
			ID: id, Session: r.session, Fingerprint: fp, Arguments: doc, Owner: "seed",
			NeedsApproval: r.state == ledger.StateDenied || r.state == ledger.StatePendingApproval,
		})
		if err != nil || !c.Won {
			t.Fatalf("Claim(%v) = %+v, %v; want a won claim", id, c, err)
		}
		from := c.Record.State
		if r.state == from {
			continue
		}
		tr := ledger.Transition{ID: id, From: from, To: r.state, Owner: "seed", Fence: c.Record.Fence, AddAttempts: 1}
		switch r.state {
		case ledger.StateSucceeded, ledger.StateFailed:
			tr.Result = json.RawMessage(r.result)
		case ledger.StateUnknown:
			tr.ErrorKind, tr.ErrorMessage = "lost_response", "connection dropped after send"
		case ledger.StateDenied:
			tr.AddAttempts = 0
			tr.Approval = &ledger.Approval{Decision: ledger.DecisionDenied, By: "seed", At: now, Reason: "too much"}
		}
		if _, err := st.Transition(ctx, tr); err != nil {
			t.Fatalf("Transition(%v -> %s) = %v", id, r.state, err)
		}
	}
}

// readRecord opens the ledger at path and returns one record.
func readRecord(t *testing.T, path string, id ledger.ID) *ledger.Record {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%q) = %v", path, err)
	}
	defer st.Close()
	r, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%v) = %v", id, err)
	}
	return r
}

func ledgerEnv(t *testing.T) (path string, env map[string]string) {
	dir := t.TempDir()
	path = filepath.Join(dir, "ledger.db")
	return path, map[string]string{"MCPLEDGER_LEDGER": path, "HOME": dir}
}

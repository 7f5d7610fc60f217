package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

const okResult = `{"content":[{"type":"text","text":"payment pay_1 created"}]}`

func seedMixed(t *testing.T, path string, now time.Time) {
	seedLedger(t, path, now,
		seedRecord{tool: "create_payment", key: "order-1", session: "s1", state: ledger.StateSucceeded, result: okResult},
		seedRecord{tool: "create_payment", key: "order-2", session: "s1", state: ledger.StateUnknown},
		seedRecord{tool: "refund", key: "order-2", session: "s2", state: ledger.StateFailed,
			result: `{"content":[{"type":"text","text":"nothing to refund"}],"isError":true}`},
		seedRecord{tool: "send_mail", key: "mail-1", session: "s2", state: ledger.StateDenied},
		seedRecord{tenant: "other", tool: "create_payment", key: "order-9", session: "s1", state: ledger.StateSucceeded, result: okResult},
	)
}

func TestLedgerList(t *testing.T) {
	path, env := ledgerEnv(t)
	seedMixed(t, path, time.Now())
	tests := []struct {
		name     string
		args     []string
		wantKeys []string // in any order
	}{
		{"all of the tenant", nil, []string{"order-1", "order-2", "order-2", "mail-1"}},
		{"by state", []string{"--state", "unknown"}, []string{"order-2"}},
		{"by tool", []string{"--tool", "refund"}, []string{"order-2"}},
		{"by session", []string{"--session", "s2"}, []string{"order-2", "mail-1"}},
		{"other tenant", []string{"--tenant", "other"}, []string{"order-9"}},
		{"unknown tenant", []string{"--tenant", "nobody"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := inProcess(t, env, nil, append([]string{"ledger", "list"}, tc.args...)...)
			o.wantExit(t, exitOK)
			lines := strings.Split(strings.TrimRight(o.stdout, "\n"), "\n")
			if !strings.HasPrefix(lines[0], "CREATED") {
				t.Fatalf("ledger list %v: first line %q; want the header", tc.args, lines[0])
			}
			var keys []string
			for _, l := range lines[1:] {
				keys = append(keys, strings.Fields(l)[3])
			}
			if !sameMultiset(keys, tc.wantKeys) {
				t.Errorf("ledger list %v keys = %v; want %v", tc.args, keys, tc.wantKeys)
			}
			// Aligned columns: every row's STATE starts where the header's does.
			col := strings.Index(lines[0], "STATE")
			for _, l := range lines[1:] {
				if f := strings.Fields(l[col:]); len(f) == 0 || !ledger.State(f[0]).Valid() {
					t.Errorf("row %q: no state at column %d", l, col)
				}
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		o := inProcess(t, env, nil, "--json", "ledger", "list", "--state", "SUCCEEDED")
		o.wantExit(t, exitOK)
		recs := jsonLines[ledger.Record](t, o.stdout)
		if len(recs) != 1 || recs[0].Key != "order-1" || recs[0].State != ledger.StateSucceeded || len(recs[0].Result) == 0 {
			t.Errorf("ledger list --json = %+v; want one SUCCEEDED record order-1 with its result", recs)
		}
	})
	t.Run("limit", func(t *testing.T) {
		o := inProcess(t, env, nil, "ledger", "list", "--limit", "1")
		o.wantExit(t, exitOK)
		if n := strings.Count(o.stdout, "\n"); n != 2 {
			t.Errorf("ledger list --limit 1 printed %d lines; want header and one row:\n%s", n, o.stdout)
		}
		if !strings.Contains(o.stderr, "--cursor ") {
			t.Errorf("ledger list --limit 1 stderr = %q; want a hint that more records exist", o.stderr)
		}
	})
	t.Run("no colour off a terminal", func(t *testing.T) {
		o := inProcess(t, env, nil, "ledger", "list")
		if strings.Contains(o.stdout, "\x1b[") {
			t.Errorf("ledger list wrote colour codes to a buffer: %q", o.stdout)
		}
	})
}

func TestLedgerShow(t *testing.T) {
	path, env := ledgerEnv(t)
	seedMixed(t, path, time.Now())

	t.Run("text", func(t *testing.T) {
		o := inProcess(t, env, nil, "ledger", "show", "order-1")
		o.wantExit(t, exitOK)
		for _, want := range []string{"create_payment", "SUCCEEDED", "payment pay_1 created", `"payee":"acme"`} {
			if !strings.Contains(o.stdout, want) {
				t.Errorf("ledger show order-1 does not show %q:\n%s", want, o.stdout)
			}
		}
	})
	t.Run("approval", func(t *testing.T) {
		o := inProcess(t, env, nil, "ledger", "show", "mail-1")
		o.wantExit(t, exitOK)
		if !strings.Contains(o.stdout, "denied by seed") || !strings.Contains(o.stdout, "too much") {
			t.Errorf("ledger show mail-1 does not show the denial:\n%s", o.stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		o := inProcess(t, env, nil, "--json", "ledger", "show", "order-2", "--tool", "refund")
		o.wantExit(t, exitOK)
		recs := jsonLines[ledger.Record](t, o.stdout)
		if len(recs) != 1 || recs[0].Tool != "refund" || recs[0].State != ledger.StateFailed {
			t.Errorf("ledger show --json = %+v; want the FAILED refund record", recs)
		}
	})
	bad := []struct {
		name  string
		args  []string
		code  int
		hints []string
	}{
		{"ambiguous key", []string{"order-2"}, exitUsage, []string{"create_payment, refund", "--tool"}},
		{"missing key", []string{"order-404"}, exitUsage, []string{"order-404", "ledger list"}},
		{"other tenant's key", []string{"order-9"}, exitUsage, []string{"order-9"}},
		{"invalid key", []string{"order 1"}, exitUsage, []string{"invalid idempotency key"}},
		{"no key", nil, exitUsage, []string{"usage"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			inProcess(t, env, nil, append([]string{"ledger", "show"}, tc.args...)...).wantExit(t, tc.code, tc.hints...)
		})
	}
}

func TestLedgerReconcile(t *testing.T) {
	tests := []struct {
		name    string
		as      string
		want    ledger.State
		isError bool
	}{
		{"succeeded", "succeeded", ledger.StateSucceeded, false},
		{"failed", "FAILED", ledger.StateFailed, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, env := ledgerEnv(t)
			env["USER"] = "mallory" // no one's identity: the OS account is
			seedMixed(t, path, time.Now())
			o := inProcess(t, env, nil, "ledger", "reconcile", "order-2", "--tool", "create_payment",
				"--as", tc.as, "--note", "checked the bank statement")
			o.wantExit(t, exitOK)
			r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-2"})
			if r.State != tc.want {
				t.Fatalf("after reconcile --as %s: state = %s; want %s", tc.as, r.State, tc.want)
			}
			if r.ErrorKind != kindReconciled || !strings.Contains(r.ErrorMessage, "checked the bank statement") ||
				!strings.Contains(r.ErrorMessage, "by "+osAccount()+" at") || strings.Contains(r.ErrorMessage, "mallory") {
				t.Errorf("reconciled record error = %q: %q; want kind %q and a message with who and the note", r.ErrorKind, r.ErrorMessage, kindReconciled)
			}
			res, err := decodeResult(r.Result)
			if err != nil || res == nil {
				t.Fatalf("reconciled result = %s, %v; want a CallToolResult", r.Result, err)
			}
			if res.IsError != tc.isError || !strings.Contains(resultText(res), "checked the bank statement") {
				t.Errorf("reconciled result = %s; want isError %v and the note", r.Result, tc.isError)
			}
		})
	}

	// A result file is what later calls get back, byte for byte; the
	// record keeps who (the OS account) and the note as its resolution.
	t.Run("result file", func(t *testing.T) {
		path, env := ledgerEnv(t)
		env["USER"] = "mallory"
		seedMixed(t, path, time.Now())
		file := filepath.Join(t.TempDir(), "result.json")
		want := `{"content":[{"type":"text","text":"payment p_42"}],"structuredContent":{"id":"p_42"}}`
		if err := os.WriteFile(file, []byte(want+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		inProcess(t, env, nil, "ledger", "reconcile", "order-2", "--tool", "create_payment", "--as", "succeeded",
			"--result-file", file, "--note", "found p_42 in the bank").wantExit(t, exitOK)
		r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-2"})
		if r.State != ledger.StateSucceeded || string(r.Result) != want {
			t.Fatalf("after reconcile --result-file: %s with result %s; want SUCCEEDED with %s", r.State, r.Result, want)
		}
		if res := r.Reconciled; res == nil || res.Method != ledger.MethodPerson || res.By != osAccount() || res.Evidence != "found p_42 in the bank" || res.At.IsZero() {
			t.Errorf("resolution = %+v; want found by a person, %s, with the note", res, osAccount())
		}
	})

	// not_run: nothing ran, so the record becomes RETRYABLE without a
	// result, and the next call with the key runs it.
	t.Run("not_run", func(t *testing.T) {
		path, env := ledgerEnv(t)
		seedMixed(t, path, time.Now())
		o := inProcess(t, env, nil, "ledger", "reconcile", "order-2", "--tool", "create_payment", "--as", "not_run", "--note", "no payment at the bank")
		o.wantExit(t, exitOK)
		if !strings.Contains(o.stdout, "UNKNOWN -> RETRYABLE") {
			t.Errorf("ledger reconcile --as not_run printed %q; want UNKNOWN -> RETRYABLE", o.stdout)
		}
		r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-2"})
		if r.State != ledger.StateRetryable || len(r.Result) != 0 || r.Reconciled == nil || r.Reconciled.Verdict != ledger.VerdictNotRun {
			t.Errorf("after reconcile --as not_run: %s, result %s, resolution %+v; want RETRYABLE, no result, not_run", r.State, r.Result, r.Reconciled)
		}
		show := inProcess(t, env, nil, "--wide", "ledger", "show", "order-2", "--tool", "create_payment") // the whole finding
		show.wantExit(t, exitOK)
		for _, want := range []string{"not_run by person (" + osAccount() + ")", "no payment at the bank", "findings"} {
			if !strings.Contains(show.stdout, want) {
				t.Errorf("ledger show after not_run does not show %q:\n%s", want, show.stdout)
			}
		}
	})

	path, env := ledgerEnv(t)
	seedMixed(t, path, time.Now())
	notJSON := filepath.Join(t.TempDir(), "result.txt")
	if err := os.WriteFile(notJSON, []byte("paid"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name  string
		args  []string
		hints []string
	}{
		{"not unknown", []string{"order-1", "--as", "failed"}, []string{"SUCCEEDED", "only UNKNOWN"}},
		{"bad as", []string{"order-2", "--tool", "create_payment", "--as", "maybe"}, []string{"--as succeeded, --as failed or --as not_run"}},
		{"result file missing", []string{"order-2", "--tool", "create_payment", "--as", "succeeded", "--result-file", "/nonexistent/r.json"}, []string{"--result-file", "CallToolResult"}},
		{"result file not JSON", []string{"order-2", "--tool", "create_payment", "--as", "succeeded", "--result-file", notJSON}, []string{"not a JSON object"}},
		{"result of not_run", []string{"order-2", "--tool", "create_payment", "--as", "not_run", "--result-file", notJSON}, []string{"no result"}},
		{"no as", []string{"order-2", "--tool", "create_payment"}, []string{"--as"}},
		{"ambiguous", []string{"order-2", "--as", "failed"}, []string{"--tool"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			inProcess(t, env, nil, append([]string{"ledger", "reconcile"}, tc.args...)...).wantExit(t, exitUsage, tc.hints...)
		})
	}
	if r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-2"}); r.State != ledger.StateUnknown {
		t.Errorf("after refused reconciles: state = %s; want UNKNOWN untouched", r.State)
	}
}

func TestLedgerPurge(t *testing.T) {
	path, env := ledgerEnv(t)
	seedMixed(t, path, time.Now().Add(-48*time.Hour))
	seedLedger(t, path, time.Now(),
		seedRecord{tool: "create_payment", key: "fresh", session: "s1", state: ledger.StateSucceeded, result: okResult})

	inProcess(t, env, nil, "ledger", "purge", "--older-than", "soon").wantExit(t, exitUsage, "--older-than", "36h")

	// A young record answers retries: purging it takes --force.
	inProcess(t, env, nil, "ledger", "purge", "--older-than", "1s").wantExit(t, exitUsage, "--older-than 1s", "retries", "--force")
	if r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "fresh"}); r.State != ledger.StateSucceeded {
		t.Errorf("fresh after a refused purge = %s; want SUCCEEDED", r.State)
	}

	// --dry-run counts what would go, per state, and deletes nothing.
	dry := inProcess(t, env, nil, "ledger", "purge", "--older-than", "1d", "--dry-run")
	dry.wantExit(t, exitOK)
	for _, want := range []string{"would purge 4 records, created ", "SUCCEEDED       2", "FAILED          1", "DENIED          1", "nothing was deleted"} {
		if !strings.Contains(dry.stdout, want) {
			t.Errorf("purge --dry-run printed %q; want it to show %q", dry.stdout, want)
		}
	}
	dryJSON := inProcess(t, env, nil, "--json", "ledger", "purge", "--older-than", "1d", "--dry-run")
	dryJSON.wantExit(t, exitOK)
	type dryRun struct {
		DryRun         bool                 `json:"dryRun"`
		Records        int                  `json:"records"`
		ByState        map[ledger.State]int `json:"byState"`
		Oldest, Newest time.Time
	}
	if got := jsonLines[dryRun](t, dryJSON.stdout); len(got) != 1 || !got[0].DryRun || got[0].Records != 4 || got[0].ByState[ledger.StateSucceeded] != 2 || got[0].Oldest.IsZero() {
		t.Errorf("purge --dry-run --json = %s; want 4 records, 2 SUCCEEDED, and the oldest", dryJSON.stdout)
	}
	if r := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-1"}); r.State != ledger.StateSucceeded {
		t.Errorf("order-1 after --dry-run = %s; want it kept", r.State)
	}

	o := inProcess(t, env, nil, "--json", "ledger", "purge", "--older-than", "1d")
	o.wantExit(t, exitOK)
	got := jsonLines[map[string]int](t, o.stdout)
	// Old and settled: order-1, refund order-2, mail-1 (tenant default) and
	// order-9 (tenant other: purge is ledger-wide). UNKNOWN stays.
	if len(got) != 1 || got[0]["purged"] != 4 {
		t.Errorf("ledger purge --older-than 1d = %v; want {\"purged\":4}", got)
	}
	o = inProcess(t, env, nil, "--json", "ledger", "list")
	var keys []string
	for _, r := range jsonLines[ledger.Record](t, o.stdout) {
		keys = append(keys, r.Key+"/"+string(r.State))
	}
	if want := []string{"fresh/SUCCEEDED", "order-2/UNKNOWN"}; !sameMultiset(keys, want) {
		t.Errorf("after purge the ledger holds %v; want %v", keys, want)
	}
}

func TestUnreadableLedger(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		ledger string
		hints  []string
	}{
		{"not sqlite", garbage, []string{garbage, "--ledger"}},
		{"a directory", dir, []string{"directory", "--ledger"}},
		{"missing file", filepath.Join(dir, "nope.db"), []string{"no ledger at", "--ledger"}},
		{"unknown scheme", "mysql://db/ledger", []string{"mysql", "postgres://"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inProcess(t, map[string]string{"HOME": dir}, nil, "--ledger", tc.ledger, "ledger", "list").
				wantExit(t, exitUsage, tc.hints...)
		})
	}
	t.Run("env", func(t *testing.T) {
		inProcess(t, map[string]string{"HOME": dir, "MCPLEDGER_LEDGER": garbage}, nil, "ledger", "list").
			wantExit(t, exitUsage, garbage)
	})
}

func TestDefaultLedgerPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xdg", map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/a"}, "/state/mcpledger/ledger.db"},
		{"home", map[string]string{"HOME": "/home/a"}, "/home/a/.local/state/mcpledger/ledger.db"},
		{"relative xdg is ignored", map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/a"}, "/home/a/.local/state/mcpledger/ledger.db"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &app{getenv: func(k string) string { return tc.env[k] }}
			if got, err := a.defaultLedgerPath(); err != nil || got != tc.want {
				t.Errorf("defaultLedgerPath() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func sameMultiset(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
		if count[s] < 0 {
			return false
		}
	}
	return true
}

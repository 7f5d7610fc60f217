package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpledger/mcpledger/ledger"
)

// The tests of this file run the real agentctl binary the way a new user
// meets it: installing, reading help, typing arguments, reading errors.

func TestLicenseAndChangelog(t *testing.T) {
	for file, want := range map[string]string{
		"../../LICENSE":      "MIT License",
		"../../CHANGELOG.md": "## [0.1.0]",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not contain %q", file, want)
		}
	}
}

func TestVersion(t *testing.T) {
	e := newE2E(t)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		o := e.run(nil, args...)
		o.wantExit(t, exitOK)
		// Built from this source tree, not from a tagged module: the
		// source's version, marked as a development build.
		if !strings.HasPrefix(o.stdout, "agentctl "+version+"-dev ") || strings.Count(o.stdout, "\n") != 1 {
			t.Errorf("agentctl %v printed %q; want one line starting with agentctl %s-dev", args, o.stdout, version)
		}
	}
	o := e.run(nil, "--json", "version")
	o.wantExit(t, exitOK)
	v := jsonLines[versionInfo](t, o.stdout)
	if len(v) != 1 || v[0].Version != version+"-dev" || !strings.HasPrefix(v[0].Go, "go") || v[0].Platform == "" {
		t.Errorf("agentctl --json version = %+v; want version %s-dev, the Go version and the platform", v, version)
	}
}

func TestHelpHidesTheEnvironment(t *testing.T) {
	e := newE2E(t)
	const secretURL = "postgres://u:s3cretpw@h/db"
	env := []string{"MCPLEDGER_LEDGER=" + secretURL, "MCPLEDGER_POLICY=/etc/secret-policy.json", "MCPLEDGER_TENANT=acme-secret-tenant"}
	for _, args := range [][]string{{"ledger", "--help"}, {"--help"}, {"call", "--help"}, {"proxy", "--help"}, {"ledger", "list", "--help"}} {
		o := e.runEnv(nil, env, args...)
		o.wantExit(t, exitOK)
		for _, leak := range []string{"s3cretpw", secretURL, "secret-policy", "acme-secret-tenant"} {
			if strings.Contains(o.stdout+o.stderr, leak) {
				t.Errorf("agentctl %v shows %q from the environment:\n%s", args, leak, o.stdout)
			}
		}
		if !strings.Contains(o.stdout, "MCPLEDGER_LEDGER") {
			t.Errorf("agentctl %v does not name MCPLEDGER_LEDGER:\n%s", args, o.stdout)
		}
	}
}

func TestDSNPasswordsMasked(t *testing.T) {
	e := newE2E(t)
	for _, dsn := range []string{
		"postgresql://127.0.0.1:1/app?password=s3cretpw",
		"postgres://u:s3cretpw@127.0.0.1:1/app",
		"postgres://u:s3cretpw@127.0.0.1:1/app?sslmode=disable&password=s3cretpw",
	} {
		for _, json := range []bool{false, true} {
			args := []string{"--ledger", dsn, "ledger", "list"}
			if json {
				args = append([]string{"--json"}, args...)
			}
			o := e.run(nil, args...)
			o.wantExit(t, exitUnreachable, "xxxxx")
			if strings.Contains(o.stdout+o.stderr, "s3cretpw") {
				t.Errorf("agentctl %v printed the password:\nstdout: %s\nstderr: %s", args, o.stdout, o.stderr)
			}
		}
	}
}

func TestArgumentsTypedBySchema(t *testing.T) {
	e := newE2E(t)
	// payee is a string in the schema: digits and null stay strings.
	for key, payee := range map[string]string{"t-digits": "1234", "t-null": "null"} {
		o := e.call(nil, "--json", "--yes", "--key", key, "create_payment", "amount_cents=100", "currency=EUR", "payee="+payee)
		o.wantExit(t, exitOK)
		c := oneCall(t, o)
		if c.State != "SUCCEEDED" || c.Result == nil || len(c.Result.Content) == 0 || !strings.HasSuffix(c.Result.Content[0].Text, "to "+payee) {
			t.Errorf("payee=%s: %+v; want a payment to %q", payee, c, payee)
		}
	}
	bad := []struct {
		name string
		args []string
		hint []string
	}{
		{"an integer field", []string{"amount_cents=12.50", "currency=EUR", "payee=acme"}, []string{"amount_cents", "an integer", "nothing ran"}},
		{"text in an integer field", []string{"amount_cents=abc", "currency=EUR", "payee=acme"}, []string{"amount_cents", "an integer"}},
		{"a name twice in --args", []string{"--args", `{"amount_cents":1,"currency":"EUR","payee":"a","payee":"b"}`}, []string{"payee", "twice"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			o := e.call(nil, append([]string{"--json", "--yes", "--key", "t-bad", "create_payment"}, tc.args...)...)
			o.wantExit(t, exitUsage, tc.hint...)
			errs := jsonLines[errorJSON](t, o.stdout)
			if len(errs) != 1 || errs[0].Error.Reason != reasonInvalidArgument || errs[0].Error.Exit != exitUsage {
				t.Errorf("--json error = %+v; want reason %s, exit %d", errs, reasonInvalidArgument, exitUsage)
			}
		})
	}
	// Nothing was claimed for the refused key: the corrected call runs.
	if list := e.run(nil, "--json", "ledger", "list"); strings.Contains(list.stdout, "t-bad") {
		t.Errorf("a refused call left a record:\n%s", list.stdout)
	}
	e.call(nil, "--yes", "--key", "t-bad", "create_payment", "amount_cents=1250", "currency=EUR", "payee=acme").wantExit(t, exitOK)
}

func TestJSONErrors(t *testing.T) {
	e := newE2E(t)
	e.call(nil, append([]string{"--yes", "--key", "j-reuse"}, pay...)...).wantExit(t, exitOK)
	o := e.call(nil, "--json", "--yes", "--key", "j-reuse", "create_payment", "amount_cents=999", "currency=EUR", "payee=acme")
	o.wantExit(t, exitUsage, "j-reuse", "another --key")
	errs := jsonLines[errorJSON](t, o.stdout)
	if len(errs) != 1 {
		t.Fatalf("--json printed %d objects; want 1 error object:\n%s", len(errs), o.stdout)
	}
	got := errs[0].Error
	if got.Reason != reasonKeyReused || got.Key != "j-reuse" || got.Exit != exitUsage || got.State != "" || got.Message == "" {
		t.Errorf("key reuse --json error = %+v; want reason %s, key j-reuse, exit %d and no state (nothing was recorded for this call)", got, reasonKeyReused, exitUsage)
	}

	// A huge argument is refused with a fix, and the error line stays short.
	big := filepath.Join(e.dir, "big.json")
	memo := strings.Repeat("x", 2<<20)
	if err := os.WriteFile(big, fmt.Appendf(nil, `{"amount_cents":1,"currency":"EUR","payee":"acme","memo":%q}`, memo), 0o600); err != nil {
		t.Fatal(err)
	}
	o = e.call(nil, "--json", "--yes", "--key", "j-big", "create_payment", "--args", "@"+big)
	o.wantExit(t, exitUsage, "too large", "reference")
	if len(o.stderr) > maxErrorLine+100 || len(o.stdout) > 2*maxErrorLine {
		t.Errorf("the error of a 2 MiB argument is %d bytes on stderr and %d on stdout; want them bounded", len(o.stderr), len(o.stdout))
	}
	if errs := jsonLines[errorJSON](t, o.stdout); len(errs) != 1 || errs[0].Error.Reason != reasonArgumentsTooLarge {
		t.Errorf("--json error = %+v; want reason %s", errs, reasonArgumentsTooLarge)
	}
}

func TestExitCodesThroughTheProxy(t *testing.T) {
	e := newE2E(t)
	policy := filepath.Join(e.dir, "deny.json")
	if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"deny","note":"no payments today"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The proxy keeps its own ledger; the outer call approves with --yes
	// and the proxy's policy denies.
	proxy := fmt.Sprintf("'%s' --ledger '%s' proxy --policy '%s' -- '%s' -db '%s'",
		e.agentctl, filepath.Join(e.dir, "proxy.db"), policy, e.payments, e.payDB)
	o := e.run(nil, append([]string{"--json", "call", "--server", proxy, "--yes", "--key", "p-1"}, pay...)...)
	o.wantExit(t, exitDenied, "denied at the proxy", "p-1")
	errs := jsonLines[errorJSON](t, o.stdout)
	if len(errs) != 1 || errs[0].Error.Reason != reasonDenied || errs[0].Error.State != "DENIED" || errs[0].Error.Exit != exitDenied {
		t.Errorf("--json error through the proxy = %+v; want reason %s, state DENIED, exit %d", errs, reasonDenied, exitDenied)
	}
	if n := e.paymentsFor("p-1"); n != 0 {
		t.Errorf("payments for a denied call = %d; want 0", n)
	}
	// The outer ledger keeps the proxy's word: DENIED, not FAILED, in
	// the record and in ledger show.
	if r := e.record("p-1"); r.State != ledger.StateDenied {
		t.Errorf("client record of a call the proxy denied = %s (%s); want DENIED", r.State, r.ErrorKind)
	}
	e.run(nil, "ledger", "show", "p-1").wantExit(t, exitOK, "DENIED")
	// The repeat is a replay from the outer ledger, with the same exit.
	e.run(nil, append([]string{"call", "--server", proxy, "--yes", "--key", "p-1"}, pay...)...).wantExit(t, exitDenied, "p-1")

	// A proxy that asks and has no one to ask: nothing ran, REJECTED at
	// both ledgers, so the same key runs once a proxy lets it through.
	ask := fmt.Sprintf("'%s' --ledger '%s' proxy -- '%s' -db '%s'",
		e.agentctl, filepath.Join(e.dir, "proxy.db"), e.payments, e.payDB)
	e.run(nil, append([]string{"call", "--server", ask, "--yes", "--key", "p-2"}, pay...)...).wantExit(t, exitUsage, "p-2")
	if r := e.record("p-2"); r.State != ledger.StateRejected {
		t.Errorf("client record of a call no one confirmed at the proxy = %s (%s); want REJECTED", r.State, r.ErrorKind)
	}
	allow := filepath.Join(e.dir, "allow.json")
	if err := os.WriteFile(allow, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"now allowed"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed := fmt.Sprintf("'%s' --ledger '%s' proxy --policy '%s' -- '%s' -db '%s'",
		e.agentctl, filepath.Join(e.dir, "proxy.db"), allow, e.payments, e.payDB)
	e.run(nil, append([]string{"call", "--server", allowed, "--yes", "--key", "p-2"}, pay...)...).wantExit(t, exitOK)
	if n := e.paymentsFor("p-2"); n != 1 {
		t.Errorf("payments for p-2 once allowed = %d; want 1", n)
	}
}

func TestCallTimeout(t *testing.T) {
	e := newE2E(t)
	// The handler never returns: only --timeout ends this call (run's own
	// guard kills a hung agentctl and fails the test).
	o := e.runEnv(nil, []string{"PAYMENTS_FAULT=handler=hang"},
		append([]string{"call", "--server", e.server, "--yes", "--key", "to-1", "--timeout", "3s"}, pay...)...)
	o.wantExit(t, exitUnknown, "to-1", "ledger reconcile")
	show := e.run(nil, "--json", "ledger", "show", "to-1")
	if recs := jsonLines[map[string]any](t, show.stdout); len(recs) != 1 || recs[0]["state"] != "UNKNOWN" {
		t.Errorf("ledger show to-1 = %s; want UNKNOWN (the request may have run)", show.stdout)
	}
	e.run(nil, "call", "--server", e.server, "--timeout", "-1s", "get_payment", "payment_id=x").wantExit(t, exitUsage, "--timeout")

	// A server that never answers: nothing was sent, so nothing ran, and
	// the timeout is kept: the silent child is killed when it passes, not
	// given a closing session's grace (stdin closed, then SIGTERM after
	// 2 s), which the child would note in its file.
	termed := filepath.Join(e.dir, "silent.sigterm")
	server := shellJoin([]string{os.Args[0], "-test.run=^$"})
	silent := e.runEnv(nil, []string{envSilentServer + "=" + termed},
		"--json", "call", "--server", server, "--timeout", "1s", "--key", "to-2", "get_payment", "payment_id=x")
	silent.wantExit(t, exitUnreachable, "--timeout 1s", "nothing ran")
	if b, err := os.ReadFile(termed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the silent server was asked to stop (%q, %v); want it killed once --timeout 1s passed", b, err)
	}
	if errs := jsonLines[errorJSON](t, silent.stdout); len(errs) != 1 || errs[0].Error.Reason != reasonTimeout {
		t.Errorf("--json error of a silent server = %+v; want reason %s", errs, reasonTimeout)
	}
}

func TestTablesFitTheTerminal(t *testing.T) {
	e := newE2E(t)
	now := time.Now()
	long := "order-" + strings.Repeat("abcdefghij", 8)
	seedLedger(t, filepath.Join(e.dir, "ledger.db"), now,
		seedRecord{tool: "create_payment_with_a_very_long_tool_name", key: long, session: "a-session-with-a-long-name-too", state: ledger.StateSucceeded, result: okResult},
		seedRecord{tool: "refund", key: "r-1", session: "s1", state: ledger.StateUnknown},
	)
	o := e.runEnv(nil, []string{"COLUMNS=80"}, "ledger", "list")
	o.wantExit(t, exitOK)
	lines := strings.Split(strings.TrimRight(o.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("ledger list printed %d lines; want a header and 2 rows:\n%s", len(lines), o.stdout)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns at COLUMNS=80: %q", n, l)
		}
	}
	if !strings.Contains(o.stdout, "…") || strings.Contains(o.stdout, long) || !strings.Contains(o.stderr, "--wide") {
		t.Errorf("ledger list at 80 columns: want the long key cut with an ellipsis and a --wide hint\nstdout: %s\nstderr: %s", o.stdout, o.stderr)
	}
	cols := len(strings.Fields(lines[0]))
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) != cols {
			t.Errorf("row %q has %d fields; want %d, as the header (no cell split or wrapped)", l, len(f), cols)
		}
	}
	wide := e.runEnv(nil, []string{"COLUMNS=80"}, "--wide", "ledger", "list")
	wide.wantExit(t, exitOK)
	if !strings.Contains(wide.stdout, long) || strings.Contains(wide.stdout, "…") {
		t.Errorf("ledger list --wide cut a cell:\n%s", wide.stdout)
	}
}

func TestStatsOfALedgerNotYetWritten(t *testing.T) {
	e := newE2E(t)
	empty := filepath.Join(e.dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(e.dir, "missing.db"), empty} {
		o := e.run(nil, "--ledger", path, "--json", "ledger", "stats")
		o.wantExit(t, exitOK)
		s := jsonLines[statsOutput](t, o.stdout)
		if len(s) != 1 || s[0].Calls != 0 || s[0].Unknown != 0 || s[0].DuplicateHits != 0 {
			t.Errorf("ledger stats of %s = %+v; want zeros", path, s)
		}
		table := e.run(nil, "--ledger", path, "ledger", "stats")
		table.wantExit(t, exitOK)
		if !strings.Contains(table.stdout, "calls") || !strings.Contains(table.stdout, "0.00% (0)") {
			t.Errorf("ledger stats of %s printed %q; want a table of zeros", path, table.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "missing.db")); !os.IsNotExist(err) {
		t.Errorf("ledger stats created the missing ledger: %v", err)
	}
}

func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "ledger.db")
	seedMixed(t, path, time.Now())
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ledger", "list"}, {"ledger", "show", "order-1"}, {"ledger", "stats"}} {
		e.run(nil, args...).wantExit(t, exitOK)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("read-only commands changed the ledger file")
	}
	// A 0-byte file is no ledger: refused, and left empty.
	empty := filepath.Join(e.dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ledger", "list"}, {"ledger", "show", "k"}} {
		e.run(nil, append([]string{"--ledger", empty}, args...)...).wantExit(t, exitUsage, empty, "empty")
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("the empty ledger after read-only commands: %v, %v; want it still empty", fi, err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(empty + suffix); !os.IsNotExist(err) {
			t.Errorf("read-only commands created %s%s", empty, suffix)
		}
	}
}

func TestFilesArePrivate(t *testing.T) {
	e := newE2E(t)
	e.call(nil, append([]string{"--yes", "--key", "f-1"}, pay...)...).wantExit(t, exitOK)
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, de := range entries {
		if !strings.HasSuffix(de.Name(), ".db") {
			continue
		}
		seen++
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v; want 0600", de.Name(), fi.Mode().Perm())
		}
	}
	if seen < 4 { // the ledger, and the payments, its ledger and downstream
		t.Errorf("found %d databases in %s; want at least 4", seen, e.dir)
	}
	// A ledger others can read is used, with one warning.
	path := filepath.Join(e.dir, "ledger.db")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	o := e.run(nil, "ledger", "list")
	o.wantExit(t, exitOK)
	if n := strings.Count(o.stderr, "agentctl: warning:"); n != 1 || !strings.Contains(o.stderr, "chmod 600") {
		t.Errorf("ledger list of a 0644 ledger: stderr %q; want one warning naming chmod 600", o.stderr)
	}
}

func TestLockedLedger(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "ledger.db")
	e.call(nil, append([]string{"--yes", "--key", "l-0"}, pay...)...).wantExit(t, exitOK)
	holder := holdLock(t, path)
	start := time.Now()
	o := e.run(nil, append([]string{"--wait", "1s", "call", "--server", e.server, "--yes", "--key", "l-1"}, pay...)...)
	took := time.Since(start)
	o.wantExit(t, exitUnreachable, path, "locked", fmt.Sprintf("process %d", holder), "--wait")
	// The wait it reports is the wait that happened.
	var waited time.Duration
	if i := strings.Index(o.stderr, "stayed locked for the "); i >= 0 {
		f := strings.Fields(o.stderr[i+len("stayed locked for the "):])
		waited, _ = time.ParseDuration(f[0])
	}
	if waited < time.Second || waited > took+time.Second {
		t.Errorf("the error says it waited %v; the command took %v: %s", waited, took, o.stderr)
	}
	if n := e.paymentsFor("l-1"); n != 0 {
		t.Errorf("payments for l-1 while the ledger was locked = %d; want 0", n)
	}
	// Reads still work while another process writes.
	e.run(nil, "ledger", "list").wantExit(t, exitOK)
	purge := e.run(nil, "--json", "--wait", "1s", "ledger", "purge", "--older-than", "1s", "--force")
	purge.wantExit(t, exitUnreachable, "locked")
	if errs := jsonLines[errorJSON](t, purge.stdout); len(errs) != 1 || errs[0].Error.Reason != reasonLedgerLocked {
		t.Errorf("--json error of a locked ledger = %+v; want reason %s", errs, reasonLedgerLocked)
	}
}

// holdLock starts this test binary as a process that holds the write lock
// of the SQLite ledger at path until the test ends, and returns its pid.
func holdLock(t *testing.T, path string) int {
	t.Helper()
	cmd := testChild(t, envLockHolder+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // its EOF lets go of the lock
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make([]byte, len("locked\n"))
	if _, err := out.Read(line); err != nil || string(line) != "locked\n" {
		t.Fatalf("the lock holder said %q, %v; want locked", line, err)
	}
	return cmd.Process.Pid
}

// --wait bounds the whole command's wait for a locked ledger, not each
// statement's: the default (5s, as the README says) and a short one each
// end the call with the locked-ledger error, nothing paid. That the
// command's writes wait once in all is TestLockedLedgerIsWaitedOnce's,
// by count.
func TestLockedLedgerWaitIsWhatItSays(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "ledger.db")
	e.call(nil, append([]string{"--yes", "--key", "w-0"}, pay...)...).wantExit(t, exitOK)
	holdLock(t, path)
	for _, args := range [][]string{nil, {"--wait", "2s"}} {
		o := e.run(nil, append(append(args, "call", "--server", e.server, "--yes", "--key", "w-1"), pay...)...)
		o.wantExit(t, exitUnreachable, "locked", "nothing was recorded")
	}
	if n := e.paymentsFor("w-1"); n != 0 {
		t.Errorf("payments for w-1 while the ledger was locked = %d; want 0", n)
	}
	if defaultLedgerWait != 5*time.Second {
		t.Errorf("defaultLedgerWait = %v; the README and --help say 5s", defaultLedgerWait)
	}
}

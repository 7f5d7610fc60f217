package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The end-to-end tests build agentctl and the payments example once, then
// run them as a user would: agentctl as a process, the payments server as
// its stdio child.

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentctl-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var built struct {
	once               sync.Once
	agentctl, payments string
	err                error
}

// binaries builds agentctl and the payments example into a shared folder.
func binaries(t *testing.T) (agentctl, payments string) {
	t.Helper()
	built.once.Do(func() {
		built.agentctl = filepath.Join(binDir, "agentctl")
		built.payments = filepath.Join(binDir, "payments")
		for _, b := range []struct{ out, pkg string }{
			{built.agentctl, "github.com/mcpledger/mcpledger/cmd/agentctl"},
			{built.payments, "github.com/mcpledger/mcpledger/examples/payments"},
		} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.agentctl, built.payments
}

// e2e is one user's setup: a ledger, a payments database, and the
// --server flag that starts the payments example on it.
type e2e struct {
	t        *testing.T
	dir      string
	agentctl string
	payments string
	payDB    string
	server   string
	env      []string
}

func newE2E(t *testing.T) *e2e {
	agentctl, payments := binaries(t)
	dir := t.TempDir()
	e := &e2e{t: t, dir: dir, agentctl: agentctl, payments: payments, payDB: filepath.Join(dir, "pay.db")}
	e.server = fmt.Sprintf("'%s' -db '%s'", payments, e.payDB)
	e.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"TMPDIR=" + os.TempDir(),
		"MCPLEDGER_LEDGER=" + filepath.Join(dir, "ledger.db"),
	}
	return e
}

// run runs agentctl. A nil stdin is /dev/null (no one to ask); a string is
// fed through a pipe, which is how a script answers the plain prompts.
func (e *e2e) run(stdin *string, args ...string) outcome {
	e.t.Helper()
	return e.runEnv(stdin, nil, args...)
}

func (e *e2e) runEnv(stdin *string, env []string, args ...string) outcome {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, args...)
	cmd.Env = append(append([]string{}, e.env...), env...)
	if stdin != nil {
		cmd.Stdin = strings.NewReader(*stdin)
	}
	return runOutcome(e.t, cmd)
}

// runOutcome runs cmd (agentctl) and returns its exit code and output; a
// run that could not start or was killed fails the test.
func runOutcome(t *testing.T, cmd *exec.Cmd) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentctl %q: %v", cmd.Args[1:], err)
	}
	return outcome{code: code, stdout: out.String(), stderr: errb.String()}
}

// call runs agentctl call against the payments server.
func (e *e2e) call(stdin *string, args ...string) outcome {
	e.t.Helper()
	return e.run(stdin, append([]string{"call", "--server", e.server}, args...)...)
}

// paymentsFor asks the payments example how many payments it made for key.
func (e *e2e) paymentsFor(key string) int {
	e.t.Helper()
	out, err := exec.Command(e.payments, "-db", e.payDB, "-count", key).Output()
	if err != nil {
		e.t.Fatalf("payments -count %s: %v", key, err)
	}
	var c struct {
		Payments int `json:"payments"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		e.t.Fatalf("payments -count %s printed %q: %v", key, out, err)
	}
	return c.Payments
}

// callResult is the --json shape of agentctl call.
type callResult struct {
	Tool     string     `json:"tool"`
	Key      string     `json:"key"`
	State    string     `json:"state"`
	Replayed bool       `json:"replayed"`
	FirstAt  *time.Time `json:"firstAt"`
	Attempts int        `json:"attempts"`
	Result   *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool           `json:"isError"`
		Meta    map[string]any `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Key     string `json:"key"`
		State   string `json:"state"`
		Exit    int    `json:"exit"`
	} `json:"error"`
}

func oneCall(t *testing.T, o outcome) callResult {
	t.Helper()
	got := jsonLines[callResult](t, o.stdout)
	if len(got) != 1 {
		t.Fatalf("agentctl --json call printed %d objects; want 1:\n%s\nstderr: %s", len(got), o.stdout, o.stderr)
	}
	return got[0]
}

func answer(s string) *string { return &s }

var pay = []string{"create_payment", "amount_cents=1250", "currency=EUR", "payee=acme"}

func TestCallSameKeyOnePayment(t *testing.T) {
	e := newE2E(t)
	first := e.call(nil, append([]string{"--yes", "--key", "order-1"}, pay...)...)
	first.wantExit(t, exitOK)
	second := e.call(nil, append([]string{"--yes", "--key", "order-1"}, pay...)...)
	second.wantExit(t, exitOK)
	if first.stdout == "" || first.stdout != second.stdout {
		t.Errorf("the two calls printed %q and %q; want the same payment twice", first.stdout, second.stdout)
	}
	if strings.Contains(first.stderr, "replayed") || !strings.Contains(second.stderr, "replayed from ") {
		t.Errorf("stderr of the calls: %q, %q; want only the second to say it was replayed", first.stderr, second.stderr)
	}
	if n := e.paymentsFor("order-1"); n != 1 {
		t.Errorf("payments for order-1 = %d; want 1", n)
	}
}

func TestCallReplanIsReplay(t *testing.T) {
	e := newE2E(t)
	// No --session and no MCPLEDGER_SESSION: both runs share the session of
	// the terminal session they run in (this test's).
	first := oneCall(t, e.call(nil, append([]string{"--json", "--yes"}, pay...)...))
	second := e.call(nil, append([]string{"--yes"}, pay...)...)
	second.wantExit(t, exitOK)
	if !strings.Contains(second.stderr, "replayed from ") || !strings.Contains(second.stderr, first.Key) {
		t.Errorf("second call's stderr = %q; want it replayed from key %s", second.stderr, first.Key)
	}
	if first.Replayed || first.Result == nil || len(first.Result.Content) == 0 ||
		!strings.Contains(second.stdout, first.Result.Content[0].Text) {
		t.Errorf("first call %+v, second printed %q; want the second to print the first's payment", first, second.stdout)
	}
	third := oneCall(t, e.call(nil, append([]string{"--json", "--yes"}, pay...)...))
	if !third.Replayed || third.Key != first.Key || third.FirstAt == nil || third.Result == nil || third.Result.Meta["io.github.mcpledger/replay"] == nil {
		t.Errorf("third call = %+v; want a replay of key %s with firstAt and the replay marker", third, first.Key)
	}
	if n := e.paymentsFor(first.Key); n != 1 {
		t.Errorf("payments for %s = %d; want 1", first.Key, n)
	}

	fresh := oneCall(t, e.call(nil, append([]string{"--json", "--yes", "--new"}, pay...)...))
	other := oneCall(t, e.call(nil, append([]string{"--json", "--yes", "--session", "another-agent"}, pay...)...))
	for name, c := range map[string]callResult{"--new": fresh, "another session": other} {
		if c.Replayed || c.Key == first.Key || c.State != "SUCCEEDED" {
			t.Errorf("%s: %+v; want a new SUCCEEDED operation", name, c)
		}
		if n := e.paymentsFor(c.Key); n != 1 {
			t.Errorf("%s: payments for %s = %d; want 1", name, c.Key, n)
		}
	}
}

func TestCallJSON(t *testing.T) {
	e := newE2E(t)
	c := oneCall(t, e.call(nil, append([]string{"--json", "--yes", "--key", "j-1"}, pay...)...))
	if c.Tool != "create_payment" || c.Key != "j-1" || c.State != "SUCCEEDED" || c.Replayed ||
		c.Attempts != 1 || c.FirstAt == nil || c.Result == nil || c.Result.IsError {
		t.Errorf("call --json = %+v; want a SUCCEEDED first execution of j-1 with its result", c)
	}
	failed := e.call(nil, "--json", "--yes", "--key", "j-2", "get_payment", "payment_id=pay_nope")
	failed.wantExit(t, exitFailed)
	if f := oneCall(t, failed); f.State != "FAILED" || f.Result == nil || !f.Result.IsError {
		t.Errorf("call --json of a tool error = %+v; want FAILED with isError", f)
	}
	unasked := e.call(nil, append([]string{"--json", "--key", "j-3"}, pay...)...)
	unasked.wantExit(t, exitUsage)
	if d := oneCall(t, unasked); d.Error == nil || d.Error.Key != "j-3" || d.Error.State != "REJECTED" ||
		d.Error.Reason != reasonNoConfirmer || d.Error.Exit != exitUsage || d.Error.Message == "" {
		t.Errorf("call --json of a call no one could confirm = %+v; want the error object with key j-3, REJECTED, reason %s and exit %d", d.Error, reasonNoConfirmer, exitUsage)
	}

	tools := e.run(nil, "--json", "tools", "--server", e.server)
	tools.wantExit(t, exitOK)
	type tool struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations *struct {
			ReadOnlyHint bool `json:"readOnlyHint"`
		} `json:"annotations"`
	}
	byName := map[string]tool{}
	for _, tl := range jsonLines[tool](t, tools.stdout) {
		byName[tl.Name] = tl
	}
	if len(byName) != 3 || len(byName["create_payment"].InputSchema) == 0 ||
		byName["get_payment"].Annotations == nil || !byName["get_payment"].Annotations.ReadOnlyHint {
		t.Errorf("tools --json = %v; want create_payment and read-only find_payment and get_payment with schemas", byName)
	}
	text := e.run(nil, "tools", "--server", e.server)
	text.wantExit(t, exitOK)
	if !strings.Contains(text.stdout, "create_payment") || !strings.Contains(text.stdout, "read-only") {
		t.Errorf("tools printed %q; want both tools and get_payment's read-only hint", text.stdout)
	}
}

func TestCallExitCodes(t *testing.T) {
	e := newE2E(t)
	e.call(nil, append([]string{"--yes", "--key", "x-1"}, pay...)...).wantExit(t, exitOK)

	t.Run("1 tool error", func(t *testing.T) {
		e.call(nil, "--yes", "get_payment", "payment_id=pay_nope").wantExit(t, exitFailed, "get_payment")
	})
	t.Run("2 key reused", func(t *testing.T) {
		e.call(nil, "--yes", "--key", "x-1", "create_payment", "amount_cents=99", "currency=EUR", "payee=acme").
			wantExit(t, exitUsage, "x-1", "other arguments", "--key")
		if n := e.paymentsFor("x-1"); n != 1 {
			t.Errorf("payments for x-1 = %d; want 1", n)
		}
	})
	t.Run("2 no one to ask, then --yes with the same key", func(t *testing.T) {
		o := e.call(nil, append([]string{"--key", "x-3"}, pay...)...)
		o.wantExit(t, exitUsage, "--yes", "policy", "same --key")
		if strings.Contains(o.stderr, "Options.") {
			t.Errorf("the CLI's error %q names the library's Go options; want its flags only", o.stderr)
		}
		if n := e.paymentsFor("x-3"); n != 0 {
			t.Errorf("payments for unconfirmed x-3 = %d; want 0", n)
		}
		e.call(nil, append([]string{"--yes", "--key", "x-3"}, pay...)...).wantExit(t, exitOK)
		if n := e.paymentsFor("x-3"); n != 1 {
			t.Errorf("payments for x-3 after --yes = %d; want 1", n)
		}
	})
	t.Run("2 empty key", func(t *testing.T) {
		e.call(nil, append([]string{"--yes", "--key", ""}, pay...)...).wantExit(t, exitUsage, "--key", "empty key")
	})
	t.Run("4 outcome unknown", func(t *testing.T) {
		// The server commits the payment and dies before answering; its
		// own ledger's lease (1s) expires and, with no reconciler to look
		// the key up, it says the outcome is unknown rather than paying
		// twice.
		server := fmt.Sprintf("'%s' -db '%s' -lease 1s", e.payments, e.payDB)
		o := e.runEnv(nil, []string{"PAYMENTS_FAULT=handler-committed=kill,reconciler=missing"},
			append([]string{"call", "--server", server, "--yes", "--key", "x-4"}, pay...)...)
		o.wantExit(t, exitUnknown, "x-4", "ledger reconcile")
		if n := e.paymentsFor("x-4"); n != 1 {
			t.Errorf("payments for x-4 = %d; want 1", n)
		}
		show := e.run(nil, "--json", "ledger", "show", "x-4")
		if recs := jsonLines[map[string]any](t, show.stdout); len(recs) != 1 || recs[0]["state"] != "UNKNOWN" {
			t.Fatalf("ledger show x-4 = %s; want UNKNOWN", show.stdout)
		}
		e.run(nil, "ledger", "reconcile", "x-4", "--as", "succeeded", "--note", "pay row exists").wantExit(t, exitOK)
		again := e.call(nil, append([]string{"--yes", "--key", "x-4"}, pay...)...)
		again.wantExit(t, exitOK)
		if !strings.Contains(again.stdout, "pay row exists") || !strings.Contains(again.stderr, "replayed") {
			t.Errorf("after reconcile, call x-4 printed %q / %q; want the reconciled result replayed", again.stdout, again.stderr)
		}
		if n := e.paymentsFor("x-4"); n != 1 {
			t.Errorf("payments for x-4 after reconcile = %d; want 1", n)
		}
	})
	t.Run("5 unreachable", func(t *testing.T) {
		e.run(nil, append([]string{"call", "--url", "http://127.0.0.1:1/mcp", "--yes"}, pay...)...).
			wantExit(t, exitUnreachable, "127.0.0.1:1", "--url")
	})
}

func TestCallBadInput(t *testing.T) {
	e := newE2E(t)
	garbage := filepath.Join(e.dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a ledger\n"), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		code  int
		hints []string
	}{
		{"unknown tool", []string{"call", "--server", e.server, "--yes", "create_paymnt", "amount_cents=1"}, exitUsage,
			[]string{`no tool "create_paymnt"`, "create_payment, find_payment, get_payment"}},
		{"unknown argument", []string{"call", "--server", e.server, "--yes", "create_payment", "amount=1", "currency=EUR", "payee=a"}, exitUsage,
			[]string{"no argument amount", "amount_cents, currency, memo, payee"}},
		{"missing argument", []string{"call", "--server", e.server, "--yes", "create_payment", "currency=EUR", "payee=a"}, exitUsage,
			[]string{"needs amount_cents"}},
		{"bad k=v", []string{"call", "--server", e.server, "--yes", "create_payment", "amount_cents"}, exitUsage,
			[]string{`"amount_cents"`, "NAME=VALUE"}},
		{"invalid JSON", []string{"call", "--server", e.server, "--yes", "create_payment", "--args", `{"amount_cents":`}, exitUsage,
			[]string{"--args", "invalid JSON"}},
		{"invalid key", []string{"call", "--server", e.server, "--yes", "--key", "order 1", "create_payment", "amount_cents=1"}, exitUsage,
			[]string{"--key", "0x20"}},
		{"unreachable server", []string{"call", "--server", "'" + filepath.Join(e.dir, "no-such-server") + "'", "--yes", "create_payment"}, exitUnreachable,
			[]string{"no-such-server", "--server"}},
		{"unreadable ledger", []string{"--ledger", garbage, "call", "--server", e.server, "--yes", "create_payment", "amount_cents=1"}, exitUsage,
			[]string{garbage, "--ledger"}},
		{"no tool", []string{"call", "--server", e.server}, exitUsage, []string{"usage"}},
		{"unknown flag", []string{"call", "--sever", e.server, "create_payment"}, exitUsage, []string{"--sever", "--help"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := e.run(nil, tc.args...)
			o.wantExit(t, tc.code, tc.hints...)
			if n := strings.Count(o.stderr, "\n"); n != 1 {
				t.Errorf("stderr has %d lines; want exactly one: %q", n, o.stderr)
			}
		})
	}
	// None of it reached the ledger.
	if _, err := os.Stat(filepath.Join(e.dir, "ledger.db")); err == nil {
		list := e.run(nil, "--json", "ledger", "list")
		if list.stdout != "" {
			t.Errorf("bad input left records in the ledger:\n%s", list.stdout)
		}
	}
}

func TestCallConfirmation(t *testing.T) {
	const prompt = "needs your confirmation"
	t.Run("approve once", func(t *testing.T) {
		e := newE2E(t)
		o := e.call(answer("1\n"), append([]string{"--key", "c-1"}, pay...)...)
		o.wantExit(t, exitOK)
		if !strings.Contains(o.stderr, prompt) || !strings.Contains(o.stderr, "c-1") {
			t.Errorf("stderr = %q; want the prompt showing key c-1", o.stderr)
		}
		if n := e.paymentsFor("c-1"); n != 1 {
			t.Errorf("payments for c-1 = %d; want 1", n)
		}
		// Once is once: the next payment asks again, and with no one to
		// answer nothing runs.
		e.call(nil, "--key", "c-2", "create_payment", "amount_cents=7", "currency=EUR", "payee=acme").wantExit(t, exitUsage)
		if n := e.paymentsFor("c-2"); n != 0 {
			t.Errorf("payments for c-2 = %d; want 0", n)
		}
	})
	t.Run("approve for session", func(t *testing.T) {
		e := newE2E(t)
		e.call(answer("2\n"), append([]string{"--session", "agent-7", "--key", "s-1"}, pay...)...).wantExit(t, exitOK)
		next := e.call(nil, "--session", "agent-7", "--key", "s-2", "create_payment", "amount_cents=7", "currency=EUR", "payee=acme")
		next.wantExit(t, exitOK)
		if strings.Contains(next.stderr, prompt) {
			t.Errorf("the next call in the session asked again: %q", next.stderr)
		}
		if a, b := e.paymentsFor("s-1"), e.paymentsFor("s-2"); a != 1 || b != 1 {
			t.Errorf("payments for s-1, s-2 = %d, %d; want 1, 1", a, b)
		}
		// Another session is not covered by the approval.
		e.call(nil, "--session", "agent-8", "--key", "s-3", "create_payment", "amount_cents=7", "currency=EUR", "payee=acme").wantExit(t, exitUsage)
	})
	t.Run("deny", func(t *testing.T) {
		e := newE2E(t)
		o := e.call(answer("3\ntoo expensive\n"), append([]string{"--key", "d-1"}, pay...)...)
		o.wantExit(t, exitDenied, "too expensive", "d-1", "--new")
		if n := e.paymentsFor("d-1"); n != 0 {
			t.Errorf("payments for denied d-1 = %d; want 0", n)
		}
		show := e.run(nil, "--json", "ledger", "show", "d-1")
		recs := jsonLines[struct {
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
			Approval struct {
				Decision, Reason string
			} `json:"approval"`
		}](t, show.stdout)
		if len(recs) != 1 || recs[0].State != "DENIED" || recs[0].Attempts != 0 ||
			recs[0].Approval.Decision != "denied" || recs[0].Approval.Reason != "too expensive" {
			t.Errorf("ledger show d-1 = %+v; want DENIED, never attempted, with the reason", recs)
		}
		// The denial is final for its key: --yes later replays it.
		e.call(nil, append([]string{"--yes", "--key", "d-1"}, pay...)...).wantExit(t, exitDenied)
		if n := e.paymentsFor("d-1"); n != 0 {
			t.Errorf("payments for d-1 after --yes = %d; want 0", n)
		}
	})
}

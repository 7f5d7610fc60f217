package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// The truth rule, tried with the real binaries: once a request may have
// reached the tool, only the tool's own answer is final; everything else
// is UNKNOWN (exit 4). A call the server knows did not run is not stuck:
// the next run with the key runs it.

func (e *e2e) ledgerPath() string { return filepath.Join(e.dir, "ledger.db") }

func (e *e2e) record(key string) *ledger.Record {
	e.t.Helper()
	return readRecord(e.t, e.ledgerPath(), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: key})
}

// A handler's Go error after its commit: the payment was made. With no
// reconciler at the server, the answer is UNKNOWN at the client, never
// "failed"; a re-run replays nothing and pays nothing.
func TestTruthHandlerErrorAfterCommitIsUnknown(t *testing.T) {
	e := newE2E(t)
	e.server += " -fault handler-committed=error,reconciler=missing"
	first := e.call(nil, append([]string{"--yes", "--key", "hc-1"}, pay...)...)
	first.wantExit(t, exitUnknown, "unknown", "reconcile")
	if n := e.paymentsFor("hc-1"); n != 1 {
		t.Fatalf("payments for hc-1 = %d; want 1 (the fault comes after the commit)", n)
	}
	if r := e.record("hc-1"); r.State != ledger.StateUnknown {
		t.Errorf("client record = %s (%s); want UNKNOWN", r.State, r.ErrorKind)
	}
	again := e.call(nil, append([]string{"--yes", "--key", "hc-1"}, pay...)...)
	again.wantExit(t, exitUnknown)
	if n := e.paymentsFor("hc-1"); n != 1 {
		t.Errorf("payments for hc-1 after the re-run = %d; want still 1", n)
	}
}

// The same with the payments server's reconciler: the call that met the
// handler's error answers UNKNOWN (or, when its retry already met the
// server's UNKNOWN record, the payment); the next call with the key meets
// the server's UNKNOWN record, the reconciler finds the payment in the
// payments table, and the call answers it: exit 0, one payment, no person.
func TestTruthHandlerErrorAfterCommitIsReconciled(t *testing.T) {
	e := newE2E(t)
	e.server += " -fault handler-committed=error"
	first := e.call(nil, append([]string{"--yes", "--key", "hc-2"}, pay...)...)
	if first.code != exitOK && first.code != exitUnknown {
		t.Fatalf("first call exit = %d; want %d or %d (never failed, never nothing ran)\nstderr: %s", first.code, exitOK, exitUnknown, first.stderr)
	}
	if n := e.paymentsFor("hc-2"); n != 1 {
		t.Fatalf("payments for hc-2 = %d; want 1", n)
	}
	again := e.call(nil, append([]string{"--yes", "--key", "hc-2"}, pay...)...)
	again.wantExit(t, exitOK)
	if !strings.Contains(again.stdout, "pay_") || (first.code == exitOK && first.stdout != again.stdout) {
		t.Errorf("next call printed %q (first %q); want the first payment", again.stdout, first.stdout)
	}
	if r := e.record("hc-2"); r.State != ledger.StateSucceeded {
		t.Errorf("client record = %s (%s); want SUCCEEDED", r.State, r.ErrorKind)
	}
	if n := e.paymentsFor("hc-2"); n != 1 {
		t.Errorf("payments for hc-2 after the next call = %d; want still 1", n)
	}
}

// --timeout on a slow handler whose transaction then rolls back: UNKNOWN
// at the client (it may have run), RETRYABLE at the server (the handler
// says nothing happened), and the next run with the key pays once.
func TestTruthTimeoutRolledBackRunsOnRerun(t *testing.T) {
	e := newE2E(t)
	slow := e.server + " -fault handler=sleep:4s"
	first := e.run(nil, append([]string{"call", "--server", slow, "--timeout", "1s", "--yes", "--key", "to-1"}, pay...)...)
	first.wantExit(t, exitUnknown)
	if n := e.paymentsFor("to-1"); n != 0 {
		t.Fatalf("payments for to-1 after the timeout = %d; want 0 (rolled back)", n)
	}
	e.serverSettles("to-1", ledger.StateRetryable)
	again := e.run(nil, append([]string{"call", "--server", e.server, "--timeout", "30s", "--yes", "--key", "to-1"}, pay...)...)
	again.wantExit(t, exitOK)
	if n := e.paymentsFor("to-1"); n != 1 {
		t.Errorf("payments for to-1 after the re-run = %d; want 1", n)
	}
	if r := e.record("to-1"); r.State != ledger.StateSucceeded {
		t.Errorf("client record after the re-run = %s; want SUCCEEDED", r.State)
	}
}

// The ledger under the caller is locked after the upstream paid: the
// caller cannot record the answer, so it says UNKNOWN (exit 4), never
// "nothing was recorded" or "failed"; through a proxy, the proxy's own
// lost write reaches the client as -31003 and the client's record is
// UNKNOWN too.
func TestTruthLedgerLockedAfterPaymentIsUnknown(t *testing.T) {
	for _, through := range []string{"direct", "proxy"} {
		t.Run(through, func(t *testing.T) {
			e := newE2E(t)
			key := "lk-" + through
			slow := []string{e.payments, "-db", e.payDB, "-fault", "handler-committed=sleep:3s"}
			args := []string{"--wait", "1s", "call", "--server", shellJoin(slow), "--yes", "--key", key}
			locked := e.ledgerPath()
			if through == "proxy" {
				locked = filepath.Join(e.dir, "proxy.db")
				policy := filepath.Join(e.dir, "allow.json")
				if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"test"}]}`), 0o600); err != nil {
					t.Fatal(err)
				}
				env := append(append([]string{}, e.env...), "MCPLEDGER_LEDGER="+locked)
				url := listeningProxy(t, env, append([]string{"--wait", "1s", "--policy", policy, "--"}, slow...)...)
				args = []string{"call", "--url", url, "--yes", "--key", key}
			}
			done := make(chan outcome, 1)
			go func() { done <- e.runQuiet(append(args, pay...)...) }()
			waitFor(t, "the payment of "+key, func() bool { return e.paymentsFor(key) == 1 })
			holdLock(t, locked)
			got := <-done
			got.wantExit(t, exitUnknown, "unknown")
			if n := e.paymentsFor(key); n != 1 {
				t.Errorf("payments for %s = %d; want 1", key, n)
			}
			if through == "proxy" {
				if r := e.record(key); r.State != ledger.StateUnknown {
					t.Errorf("client record = %s (%s); want UNKNOWN", r.State, r.ErrorKind)
				}
			}
		})
	}
}

// The proxy's ledger is a PostgreSQL server that stops (an immediate
// shutdown, as a crash) after the upstream paid and before the proxy
// records the result: the proxy cannot say what happened, so its host is
// told UNKNOWN (-31003), never FAILED; the client records UNKNOWN and exits
// 4. The payment is made once.
func TestTruthProxyPostgresStopsAfterPaymentIsUnknown(t *testing.T) {
	pg := pgtest.StartServer(t)
	e := newE2E(t)
	key := "pg-stop"
	slow := []string{e.payments, "-db", e.payDB, "-fault", "handler-committed=sleep:2s"}
	policy := filepath.Join(e.dir, "allow.json")
	if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"test"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(append([]string{}, e.env...), "MCPLEDGER_LEDGER="+pg.URL)
	url := listeningProxy(t, env, append([]string{"--wait", "1s", "--policy", policy, "--"}, slow...)...)
	done := make(chan outcome, 1)
	go func() { done <- e.runQuiet(append([]string{"call", "--url", url, "--yes", "--key", key}, pay...)...) }()
	waitFor(t, "the payment of "+key, func() bool { return e.paymentsFor(key) == 1 })
	if err := pg.Crash(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	got.wantExit(t, exitUnknown, "unknown")
	if n := e.paymentsFor(key); n != 1 {
		t.Errorf("payments for %s = %d; want 1", key, n)
	}
	if r := e.record(key); r.State != ledger.StateUnknown {
		t.Errorf("client record = %s (%s); want UNKNOWN", r.State, r.ErrorKind)
	}
	// Once PostgreSQL is back, the same call resolves without a person:
	// the client re-sends its UNKNOWN call under the key to the key-aware
	// proxy, which re-sends its own to the key-aware payments server, and
	// that answers with its first payment. Nothing is paid twice.
	// The proxy knows it abandoned its own record, so it does not wait out
	// the 30 s lease that no one renews.
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.runQuiet(append([]string{"call", "--url", url, "--yes", "--key", key}, pay...)...).wantExit(t, exitOK)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the call after the restart took %v; the proxy waited out its own abandoned lease", took)
	}
	if n := e.paymentsFor(key); n != 1 {
		t.Errorf("payments for %s after the restart = %d; want 1", key, n)
	}
	if r := e.record(key); r.State != ledger.StateSucceeded {
		t.Errorf("client record after the restart = %s (%s); want SUCCEEDED", r.State, r.ErrorKind)
	}
}

// shellJoin quotes args for --server, which splits its value like a shell.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// runQuiet runs agentctl without failing the test from another goroutine.
func (e *e2e) runQuiet(args ...string) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, args...)
	cmd.Env = e.env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errb.WriteString(fmt.Sprintf("agentctl did not run: %v", err))
	}
	return outcome{code: code, stdout: out.String(), stderr: errb.String()}
}

// tryRecord reads one server guard record of create_payment in the ledger at path, if the
// ledger and the record are there.
func tryRecord(path, key string) (*ledger.Record, bool) {
	if _, err := os.Stat(path); err != nil {
		return nil, false
	}
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		return nil, false
	}
	defer st.Close()
	r, err := st.Get(context.Background(), ledger.ID{Layer: ledger.LayerServer, Tenant: "default", Tool: "create_payment", Key: key})
	return r, err == nil
}

// serverSettles waits for the payments server's own record of key to
// leave PROCESSING, and fails the test unless it is then in want.
func (e *e2e) serverSettles(key string, want ledger.State) {
	e.t.Helper()
	serverLedger := strings.TrimSuffix(e.payDB, ".db") + ".ledger.db"
	waitFor(e.t, "the server's record of "+key+" to leave PROCESSING", func() bool {
		r, ok := tryRecord(serverLedger, key)
		return ok && r.State != ledger.StateProcessing
	})
	if r, _ := tryRecord(serverLedger, key); r.State != want {
		e.t.Fatalf("the server's record of %s = %s (%s); want %s", key, r.State, r.ErrorKind, want)
	}
}

// waitFor polls cond, a state another process changes, until it holds; a
// minute without it fails the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		<-tick.C
	}
}

// A read of a server the policy trusts reads again: a payment that did
// not exist at the first read is found by the second, never replayed
// stale from the ledger.
func TestTruthTrustedReadsReadAgain(t *testing.T) {
	e := newE2E(t)
	policy := filepath.Join(e.dir, "trust.json")
	if err := os.WriteFile(policy, []byte(`{"version":1,"trusted":["payments"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	get := []string{"--policy", policy, "call", "--server", e.server, "get_payment", "payment_id=pay_later"}
	e.run(nil, get...).wantExit(t, exitFailed, "no payment")
	db, err := sql.Open("sqlite3", e.payDB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO payments (id, idempotency_key, amount_cents, currency, payee, memo, created_at) VALUES ('pay_later', 'later-1', 700, 'EUR', 'acme', '', ?)`, time.Now().UnixNano()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again := e.run(nil, get...)
	again.wantExit(t, exitOK, "pay_later")
	if strings.Contains(again.stderr, "replayed") {
		t.Errorf("the second read says %q; want a fresh read", again.stderr)
	}
}

// The disk under the caller's ledger fills up after the upstream paid:
// the answer cannot be recorded, so the outcome is UNKNOWN (exit 4), never
// "failed". A small tmpfs stands for the disk (as root; skipped otherwise).
func TestTruthDiskFullAfterPaymentIsUnknown(t *testing.T) {
	e := newE2E(t)
	fs := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(fs, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as a disk that fills up")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", fs).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", fs).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", fs, err, out)
		}
	})
	e.env = append(e.env, "MCPLEDGER_LEDGER="+filepath.Join(fs, "ledger.db"))
	slow := e.server + " -fault handler-committed=sleep:3s"
	done := make(chan outcome, 1)
	go func() {
		done <- e.runQuiet(append([]string{"call", "--server", slow, "--yes", "--key", "full-1"}, pay...)...)
	}()
	waitFor(t, "the payment of full-1", func() bool { return e.paymentsFor("full-1") == 1 })
	fill(t, filepath.Join(fs, "fill"))
	got := <-done
	got.wantExit(t, exitUnknown, "unknown")
	if n := e.paymentsFor("full-1"); n != 1 {
		t.Errorf("payments for full-1 = %d; want 1", n)
	}
}

// fill writes path until the file system has no space left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !strings.Contains(err.Error(), "no space left") {
				t.Fatalf("filling %s: %v", path, err)
			}
			return
		}
	}
}

// Twenty agents pay through one proxy on PostgreSQL, and PostgreSQL goes
// down once every payment is made, before the proxy records a result.
// Every paid key answers UNKNOWN (or, had its result landed first, the
// result), never "failed"; once PostgreSQL is back the same calls resolve
// to their first payments without a person, and nothing is paid twice.
func TestTruthProxyPostgresOutageManyClients(t *testing.T) {
	if testing.Short() {
		t.Skip("twenty agentctl processes and a PostgreSQL restart; skipped with -short")
	}
	pg := pgtest.StartServer(t)
	e := newE2E(t)
	slow := []string{e.payments, "-db", e.payDB, "-fault", "handler-committed=sleep:2s"}
	policy := filepath.Join(e.dir, "allow.json")
	if err := os.WriteFile(policy, []byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"test"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(append([]string{}, e.env...), "MCPLEDGER_LEDGER="+pg.URL)
	url := listeningProxy(t, env, append([]string{"--wait", "1s", "--policy", policy, "--"}, slow...)...)

	const clients = 20
	keys := make([]string, clients)
	done := make(chan struct {
		key string
		o   outcome
	}, clients)
	for i := range keys {
		keys[i] = fmt.Sprintf("outage-%02d", i)
		go func(key string) {
			o := e.runQuiet(append([]string{"call", "--url", url, "--yes", "--key", key}, pay...)...)
			done <- struct {
				key string
				o   outcome
			}{key, o}
		}(keys[i])
	}
	waitFor(t, "all twenty payments", func() bool {
		for _, k := range keys {
			if e.paymentsFor(k) != 1 {
				return false
			}
		}
		return true
	})
	if err := pg.Crash(); err != nil {
		t.Fatal(err)
	}
	exits := map[int]int{}
	for range keys {
		r := <-done
		exits[r.o.code]++
		if r.o.code != exitUnknown && r.o.code != exitOK {
			t.Errorf("%s, paid, exited %d during the outage; want %d (unknown) or 0\nstderr: %s", r.key, r.o.code, exitUnknown, r.o.stderr)
		}
		if st := e.record(r.key).State; st == ledger.StateFailed {
			t.Errorf("%s, paid, is FAILED at the client", r.key)
		}
	}
	t.Logf("exit codes during the outage: %v", exits)

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		e.runQuiet(append([]string{"call", "--url", url, "--yes", "--key", k}, pay...)...).wantExit(t, exitOK)
		if n := e.paymentsFor(k); n != 1 {
			t.Errorf("payments for %s after the outage = %d; want 1", k, n)
		}
		if st := e.record(k).State; st != ledger.StateSucceeded {
			t.Errorf("client record of %s after the outage = %s; want SUCCEEDED", k, st)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/wire"
)

// The proxy in front of payments -unguarded, a server that does not keep
// records of keys, with a policy that names find_payment as the probe of
// create_payment: an UNKNOWN call is settled by asking the server, inline,
// in the call that meets it.

// probeSetup is one such proxy: its host, the payments database and the
// proxy's ledger.
type probeSetup struct {
	host   *mcp.ClientSession
	db     string
	ledger string
}

// startProbeProxy starts agentctl proxy over stdio in front of payments
// -unguarded. The first payments process the proxy starts arms fault; the
// ones it starts after that one died do not.
func startProbeProxy(t *testing.T, fault, quiet string) *probeSetup {
	t.Helper()
	_, payments := binaries(t)
	dir := t.TempDir()
	s := &probeSetup{db: filepath.Join(dir, "pay.db"), ledger: filepath.Join(dir, "proxy.db")}
	policy := writeProbePolicy(t, dir, quiet)
	// mkdir succeeds once: only the first process gets the fault.
	script := fmt.Sprintf(`if mkdir '%[1]s/faulted' 2>/dev/null; then exec '%[2]s' -db '%[3]s' -unguarded -fault '%[4]s'; else exec '%[2]s' -db '%[3]s' -unguarded; fi`,
		dir, payments, s.db, fault)
	env := append(proxyEnv(t), "MCPLEDGER_LEDGER="+s.ledger)
	s.host, _ = connectStdioHost(t, env, nil, "--policy", policy, "--", "sh", "-c", script)
	return s
}

// writeProbePolicy writes a policy that allows create_payment and names
// find_payment its probe, with the quiet period quiet.
func writeProbePolicy(t *testing.T, dir, quiet string) string {
	t.Helper()
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"version": 1,
 "rules": [{"tool": "create_payment", "action": "allow"}],
 "reconcile": [{"tool": "create_payment", "probe": "find_payment",
   "arguments": {"idempotency_key": "{{.Key}}"}, "absent": "not_run", "quiet": "`+quiet+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return policy
}

// pay calls create_payment with key through the proxy within d.
func (s *probeSetup) pay(key string, d time.Duration) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.host.CallTool(ctx, &mcp.CallToolParams{Name: "create_payment", Arguments: payArgs, Meta: mcp.Meta{wire.MetaKey: key}})
}

// record is the proxy's record of key.
func (s *probeSetup) record(t *testing.T, key string) *ledger.Record {
	t.Helper()
	st, err := sqlite.Open(context.Background(), s.ledger, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%q) = %v", s.ledger, err)
	}
	defer st.Close()
	r, err := st.Get(context.Background(), ledger.ID{Tenant: "default", Layer: ledger.LayerProxy, Tool: "create_payment", Key: key})
	if err != nil {
		t.Fatalf("the proxy's record of %s: %v", key, err)
	}
	return r
}

// wantUnknown checks that err is the -31003 the proxy answers a keyed
// call whose outcome it does not know.
func wantUnknown(t *testing.T, what string, res *mcp.CallToolResult, err error) {
	t.Helper()
	if je, ok := errors.AsType[*jsonrpc.Error](err); !ok || je.Code != ledger.CodeOutcomeUnknown {
		t.Fatalf("%s = %+v, %v; want -31003 outcome unknown", what, res, err)
	}
}

// The payment was made and its answer lost with the server: the next call
// with the key gets that payment, found by the probe, and nothing is paid
// again.
func TestProxyProbeFindsLostPayment(t *testing.T) {
	s := startProbeProxy(t, "handler-committed=kill", "30s")
	res, err := s.pay("lost-1", time.Minute)
	wantUnknown(t, "the call whose server died after paying", res, err)
	if n := paymentsIn(t, s.db); n != 1 {
		t.Fatalf("payments after the kill = %d; want 1", n)
	}
	res, err = s.pay("lost-1", time.Minute)
	if err != nil || res.IsError {
		t.Fatalf("the next call with the key = %+v, %v; want the payment", res, err)
	}
	if _, ok := res.Meta[wire.MetaReplay]; !ok {
		t.Errorf("answer _meta = %v; want the replay marker", res.Meta)
	}
	if n := paymentsIn(t, s.db); n != 1 {
		t.Errorf("payments = %d; want 1", n)
	}
	r := s.record(t, "lost-1")
	if r.State != ledger.StateSucceeded || r.Reconciled == nil || r.Reconciled.Method != ledger.MethodProbe || r.Reconciled.By != "find_payment" {
		t.Errorf("proxy record = %s reconciled %+v; want SUCCEEDED, reconciled by the probe find_payment", r.State, r.Reconciled)
	}
}

// The server process died before its transaction committed: nothing was
// paid. Over stdio the proxy saw its child exit, so nothing it was sent can
// still take effect: the probe's "absent" is believed at once, and the
// next call with the key pays, once.
func TestProxyProbeRerunsOnceTheChildExited(t *testing.T) {
	s := startProbeProxy(t, "handler=kill", "1h")
	res, err := s.pay("gone-1", time.Minute)
	wantUnknown(t, "the call whose server died before paying", res, err)
	if n := paymentsIn(t, s.db); n != 0 {
		t.Fatalf("payments after the kill = %d; want 0", n)
	}
	res, err = s.pay("gone-1", time.Minute)
	if err != nil || res.IsError {
		t.Fatalf("the next call with the key = %+v, %v; want the payment", res, err)
	}
	if n := paymentsIn(t, s.db); n != 1 {
		t.Errorf("payments = %d; want 1", n)
	}
	r := s.record(t, "gone-1")
	if r.State != ledger.StateSucceeded || r.Attempts < 2 || len(r.Findings) == 0 || r.Findings[len(r.Findings)-1].Verdict != ledger.VerdictNotRun {
		t.Errorf("proxy record = %s after %d attempts, findings %+v; want SUCCEEDED, sent again after the probe's not_run", r.State, r.Attempts, r.Findings)
	}
}

// The same over HTTP, where the proxy cannot see the server's process: an
// absent answer is believed only once the quiet period has passed since
// the call; then the same key pays, once.
func TestProxyProbeRerunsAfterQuietPeriod(t *testing.T) {
	_, payments := binaries(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "pay.db")
	addr := freeAddr(t)
	startPaymentsHTTP(t, payments, addr, "-db", db, "-unguarded", "-fault", "handler=kill")
	const quiet = 3 * time.Second
	s := &probeSetup{db: db, ledger: filepath.Join(dir, "proxy.db")}
	policy := writeProbePolicy(t, dir, quiet.String())
	env := append(proxyEnv(t), "MCPLEDGER_LEDGER="+s.ledger)
	s.host, _ = connectStdioHost(t, env, nil, "--policy", policy, "--url", "http://"+addr+"/")

	res, err := s.pay("gone-2", time.Minute)
	wantUnknown(t, "the call whose server died before paying", res, err)
	unknownAt := time.Now()
	if n := paymentsIn(t, s.db); n != 0 {
		t.Fatalf("payments after the kill = %d; want 0", n)
	}
	startPaymentsHTTP(t, payments, addr, "-db", db, "-unguarded")
	res, err = s.pay("gone-2", time.Minute)
	if time.Since(unknownAt) < quiet {
		// Within the quiet period the probe's "absent" is not believed.
		wantUnknown(t, "a call within the quiet period", res, err)
		if n := paymentsIn(t, s.db); n != 0 {
			t.Fatalf("payments within the quiet period = %d; want 0", n)
		}
	}
	// Past it, the same key runs: the host calls until it is answered.
	waitFor(t, "the re-run after the quiet period", func() bool {
		res, err = s.pay("gone-2", time.Minute)
		return err == nil
	})
	if res.IsError {
		t.Fatalf("the call after the quiet period = %+v; want the payment", res)
	}
	if n := paymentsIn(t, s.db); n != 1 {
		t.Errorf("payments = %d; want 1", n)
	}
	if r := s.record(t, "gone-2"); r.State != ledger.StateSucceeded || r.Attempts < 2 {
		t.Errorf("proxy record = %s after %d attempts; want SUCCEEDED, sent again", r.State, r.Attempts)
	}
}

// freeAddr is a loopback address no one listens on, for a server the test
// restarts at the same address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// startPaymentsHTTP starts payments -http addr and returns once it listens.
func startPaymentsHTTP(t *testing.T, payments, addr string, args ...string) {
	t.Helper()
	cmd := exec.Command(payments, append([]string{"-http", addr}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // killed: its exit status says so
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on") {
			go func() {
				for sc.Scan() { // keep draining so the server never blocks on stderr
				}
			}()
			return
		}
	}
	t.Fatalf("payments -http %s exited before listening: %v", addr, sc.Err())
}

// The server goes on after the call timed out and commits late, after the
// probe first looked and found nothing: that answer is not believed within
// the quiet period, so the key is never run again, and once the payment
// exists the probe finds it.
func TestProxyProbeSlowCommitNeverPaysTwice(t *testing.T) {
	s := startProbeProxy(t, "handler=stall:4s", "1m")
	res, err := s.pay("slow-1", time.Second)
	if err == nil {
		t.Fatalf("the call on a stalled server = %+v; want its deadline", res)
	}
	waitFor(t, "the proxy to record the call UNKNOWN", func() bool { return s.record(t, "slow-1").State == ledger.StateUnknown })
	res, err = s.pay("slow-1", time.Minute)
	if paymentsIn(t, s.db) == 0 {
		// The probe looked before the commit: absent, not believed.
		wantUnknown(t, "the call before the late commit", res, err)
		r := s.record(t, "slow-1")
		if r.State != ledger.StateUnknown || len(r.Findings) == 0 || r.Findings[len(r.Findings)-1].Verdict != ledger.VerdictUnknown {
			t.Fatalf("proxy record = %s, findings %+v; want UNKNOWN with the probe's inconclusive finding", r.State, r.Findings)
		}
	}
	waitFor(t, "the late commit", func() bool { return paymentsIn(t, s.db) == 1 })
	res, err = s.pay("slow-1", time.Minute)
	if err != nil || res.IsError {
		t.Fatalf("the call after the late commit = %+v, %v; want the payment", res, err)
	}
	if n := paymentsIn(t, s.db); n != 1 {
		t.Errorf("payments = %d; want 1", n)
	}
	r := s.record(t, "slow-1")
	if r.State != ledger.StateSucceeded || r.Attempts != 1 || r.Reconciled == nil || r.Reconciled.Method != ledger.MethodProbe {
		t.Errorf("proxy record = %s after %d attempts, reconciled %+v; want SUCCEEDED from the one send, reconciled by the probe", r.State, r.Attempts, r.Reconciled)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"version": 1,
 "rules": [{"tool": "create_payment", "action": "allow"}],
 "reconcile": [{"tool": "create_payment", "probe": "find_payment",
   "arguments": {"idempotency_key": "{{.Key}}"}, "absent": "not_run", "quiet": "`+quiet+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// mkdir succeeds once: only the first process gets the fault.
	script := fmt.Sprintf(`if mkdir '%[1]s/faulted' 2>/dev/null; then exec '%[2]s' -db '%[3]s' -unguarded -fault '%[4]s'; else exec '%[2]s' -db '%[3]s' -unguarded; fi`,
		dir, payments, s.db, fault)
	env := append(proxyEnv(t), "MCPLEDGER_LEDGER="+s.ledger)
	s.host, _ = connectStdioHost(t, env, nil, "--policy", policy, "--", "sh", "-c", script)
	return s
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
	if je, ok := errors.AsType[*jsonrpc.Error](err); !ok || je.Code != wire.CodeOutcomeUnknown {
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

// The server died before its transaction committed: nothing was paid. An
// absent answer is believed once the quiet period has passed since the
// call; then the same key pays, once.
func TestProxyProbeRerunsAfterQuietPeriod(t *testing.T) {
	const quiet = 3 * time.Second
	s := startProbeProxy(t, "handler=kill", quiet.String())
	res, err := s.pay("gone-1", time.Minute)
	wantUnknown(t, "the call whose server died before paying", res, err)
	unknownAt := time.Now()
	if n := paymentsIn(t, s.db); n != 0 {
		t.Fatalf("payments after the kill = %d; want 0", n)
	}
	res, err = s.pay("gone-1", time.Minute)
	if time.Since(unknownAt) < quiet {
		// Within the quiet period the probe's "absent" is not believed.
		wantUnknown(t, "a call within the quiet period", res, err)
		if n := paymentsIn(t, s.db); n != 0 {
			t.Fatalf("payments within the quiet period = %d; want 0", n)
		}
	}
	// Past it, the same key runs: the host calls until it is answered.
	waitFor(t, "the re-run after the quiet period", func() bool {
		res, err = s.pay("gone-1", time.Minute)
		return err == nil
	})
	if res.IsError {
		t.Fatalf("the call after the quiet period = %+v; want the payment", res)
	}
	if n := paymentsIn(t, s.db); n != 1 {
		t.Errorf("payments = %d; want 1", n)
	}
	if r := s.record(t, "gone-1"); r.State != ledger.StateSucceeded || r.Attempts < 2 {
		t.Errorf("proxy record = %s after %d attempts; want SUCCEEDED, sent again", r.State, r.Attempts)
	}
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

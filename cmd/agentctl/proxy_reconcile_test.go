package main

import (
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// The payment was made and its answer lost with the server; no one calls
// the key again. The proxy's background probe finds the payment and
// settles the record by itself, and nothing is paid again.
func TestProxySweepSettlesLostPaymentInBackground(t *testing.T) {
	_, payments := binaries(t)
	dir := t.TempDir()
	s := &probeSetup{db: dir + "/pay.db", ledger: dir + "/proxy.db"}
	policy := writeProbePolicy(t, dir, "30s")
	script := `if mkdir '` + dir + `/faulted' 2>/dev/null; then exec '` + payments + `' -db '` + s.db + `' -unguarded -fault handler-committed=kill; else exec '` + payments + `' -db '` + s.db + `' -unguarded; fi`
	env := append(proxyEnv(t), "MCPLEDGER_LEDGER="+s.ledger)
	s.host, _ = connectStdioHost(t, env, nil, "--policy", policy, "--reconcile-every", "50ms", "--", "sh", "-c", script)

	res, err := s.pay("bg-lost-1", time.Minute)
	wantUnknown(t, "the call whose server died after paying", res, err)
	waitFor(t, "the background probe to settle bg-lost-1", func() bool {
		return s.record(t, "bg-lost-1").State != ledger.StateUnknown
	})
	r := s.record(t, "bg-lost-1")
	if r.State != ledger.StateSucceeded || r.Reconciled == nil || r.Reconciled.Method != ledger.MethodProbe {
		t.Errorf("proxy record = %s reconciled %+v; want SUCCEEDED by the probe", r.State, r.Reconciled)
	}
	if n := paymentsIn(t, s.db); n != 1 {
		t.Errorf("payments = %d; want 1", n)
	}
}

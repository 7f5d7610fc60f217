package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// queueProxy starts agentctl proxy in front of the payments example with
// a policy file that queues create_payment (expiry: the rule's, "" for the
// default), and connects a host without elicitation to it. env is the
// environment a second agentctl (the approver) shares with it.
func queueProxy(t *testing.T, over, expiry string) (cs *mcp.ClientSession, env []string, db string) {
	t.Helper()
	_, payments := binaries(t)
	dir := t.TempDir()
	rule := `{"tool": "create_payment", "action": "queue", "note": "money leaves the account"`
	if expiry != "" {
		rule += `, "expiry": "` + expiry + `"`
	}
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"rules": [`+rule+`}, {"tool": "*", "action": "allow"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env = proxyEnv(t, "MCPLEDGER_POLICY="+policy, "USER=agent")
	db = filepath.Join(dir, "pay.db")
	cs, _ = proxyHost(t, over, env, nil, "--", payments, "-db", db)
	return cs, env, db
}

// agentctlAs runs agentctl with the proxy's environment as user.
func agentctlAs(t *testing.T, env []string, user string, args ...string) outcome {
	t.Helper()
	// A guard against a hang only: runOutcome fails the test for a killed run.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return runOutcome(t, proxyCommandContext(ctx, t, append(append([]string{}, env...), "USER="+user), args...))
}

// hostCall is a host's tools/call that must get a result.
func hostCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s = %v; want a result", name, err)
	}
	return res
}

// proxyErrorMeta is the proxy's marker on a call it answered for the ledger.
func proxyErrorMeta(r *mcp.CallToolResult) (key string, state ledger.State) {
	m, _ := r.Meta[wire.MetaError].(map[string]any)
	k, _ := m["key"].(string)
	s, _ := m["state"].(string)
	return k, ledger.State(s)
}

// statusOf asks ledger_status through the proxy: the state and the text.
func statusOf(t *testing.T, cs *mcp.ClientSession, key string) (ledger.State, string) {
	t.Helper()
	res := hostCall(t, cs, "ledger_status", map[string]any{"key": key})
	sc, _ := res.StructuredContent.(map[string]any)
	call, _ := sc["call"].(map[string]any)
	state, _ := call["state"].(string)
	return ledger.State(state), proxyResultText(res)
}

// queuedPayment makes the call and checks that the proxy answers at once
// with a result the model can act on.
func queuedPayment(t *testing.T, cs *mcp.ClientSession, db string, args map[string]any) string {
	t.Helper()
	before := paymentsIn(t, db)
	// No one approves before hostCall returns: a call that waited for an
	// approval would end in hostCall's guard and fail there.
	res := hostCall(t, cs, "create_payment", args)
	key, state := proxyErrorMeta(res)
	text := proxyResultText(res)
	if !res.IsError || key == "" || state != ledger.StatePendingApproval {
		t.Fatalf("queued create_payment = %q (isError %v, marker %q %s); want an error result marked PENDING_APPROVAL with the key", text, res.IsError, key, state)
	}
	for _, want := range []string{key, "awaits a person's approval", "ledger_status", "Nothing has run", "agentctl ledger approve " + key} {
		if !strings.Contains(text, want) {
			t.Errorf("queued call's text %q does not say %q", text, want)
		}
	}
	if n := paymentsIn(t, db); n != before {
		t.Fatalf("payments = %d after queueing; want still %d", n, before)
	}
	return key
}

func TestProxyQueuedCall(t *testing.T) {
	for _, over := range proxyTransports {
		t.Run(over, func(t *testing.T) {
			cs, env, db := queueProxy(t, over, "")
			key := queuedPayment(t, cs, db, payArgs)
			if state, text := statusOf(t, cs, key); state != ledger.StatePendingApproval || !strings.Contains(text, "waits for a person's approval") {
				t.Errorf("ledger_status before the decision = %s %q; want PENDING_APPROVAL, waiting", state, text)
			}

			// A person approves from another process, on the same ledger.
			agentctlAs(t, env, "bob", "ledger", "approve", key, "--reason", "invoice checked").wantExit(t, exitOK)
			if state, text := statusOf(t, cs, key); state != ledger.StatePendingApproval || !strings.Contains(text, "approved by "+osAccount()) {
				t.Errorf("ledger_status after the approval = %s %q; want PENDING_APPROVAL, approved by %s (the OS account, not USER=bob)", state, text, osAccount())
			}
			if n := paymentsIn(t, db); n != 0 {
				t.Fatalf("payments = %d on the approval alone; want 0 until the call is made again", n)
			}

			// The model re-plans the same call: it runs once.
			res := hostCall(t, cs, "create_payment", payArgs)
			if res.IsError {
				t.Fatalf("approved create_payment = %q; want the payment", proxyResultText(res))
			}
			again := hostCall(t, cs, "create_payment", payArgs)
			if _, ok := again.Meta[client.MetaReplay]; !ok || proxyResultText(again) != proxyResultText(res) {
				t.Errorf("repeat = %q; want a replay of %q", proxyResultText(again), proxyResultText(res))
			}
			if n := paymentsIn(t, db); n != 1 {
				t.Fatalf("payments = %d; want exactly 1", n)
			}
			if state, _ := statusOf(t, cs, key); state != ledger.StateSucceeded {
				t.Errorf("ledger_status after the run = %s; want SUCCEEDED", state)
			}

			// Another payment, denied: the re-run gets the denial.
			other := map[string]any{"amount_cents": 990, "currency": "EUR", "payee": "globex"}
			denied := queuedPayment(t, cs, db, other)
			agentctlAs(t, env, "bob", "ledger", "deny", denied, "--reason", "not our supplier").wantExit(t, exitOK)
			if state, text := statusOf(t, cs, denied); state != ledger.StateDenied || !strings.Contains(text, "not our supplier") {
				t.Errorf("ledger_status after the denial = %s %q; want DENIED with the reason", state, text)
			}
			res = hostCall(t, cs, "create_payment", other)
			if k, state := proxyErrorMeta(res); !res.IsError || k != denied || state != ledger.StateDenied || !strings.Contains(proxyResultText(res), "not our supplier") {
				t.Errorf("re-run after the denial = %q (isError %v, %q %s); want the denial with its reason", proxyResultText(res), res.IsError, k, state)
			}
			if n := paymentsIn(t, db); n != 1 {
				t.Fatalf("payments = %d after the denial; want still 1", n)
			}
		})
	}
}

func TestProxyQueuedCallExpires(t *testing.T) {
	for _, over := range proxyTransports {
		t.Run(over, func(t *testing.T) {
			cs, env, db := queueProxy(t, over, "2s")
			key := queuedPayment(t, cs, db, payArgs)
			// Nobody decides. The expiry is wall-clock time here (a real
			// binary has no test clock): ask until it has passed.
			var state ledger.State
			var text string
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
				if state, text = statusOf(t, cs, key); state != ledger.StatePendingApproval {
					break
				}
				<-time.After(200 * time.Millisecond)
			}
			if state != ledger.StateRejected || !strings.Contains(text, "no one approved it before its approval expired") {
				t.Fatalf("ledger_status after the expiry = %s %q; want REJECTED, the approval expired", state, text)
			}
			agentctlAs(t, env, "bob", "ledger", "approve", key).wantExit(t, exitUsage)
			// Nothing ran and nothing was decided: calling again queues it
			// again, under the same key.
			if again := queuedPayment(t, cs, db, payArgs); again != key {
				t.Errorf("the call after the expiry was queued under %s; want %s", again, key)
			}
			if n := paymentsIn(t, db); n != 0 {
				t.Fatalf("payments = %d; want 0", n)
			}
		})
	}
}

// agentctl call as the host of a queueing proxy (a runtime with a ledger
// of its own): it exits 6 at once, with one attempt, naming the proxy's
// key; after the approval in the proxy's ledger the same command runs the
// payment once, and again replays it.
func TestAgentctlCallThroughAQueueingProxy(t *testing.T) {
	_, payments := binaries(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"rules": [{"tool": "create_payment", "action": "queue"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := proxyEnv(t, "MCPLEDGER_POLICY="+policy, "USER=agent")
	db := filepath.Join(dir, "pay.db")
	endpoint := listeningProxy(t, env, "--", payments, "-db", db)
	agent := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "MCPLEDGER_LEDGER=" + filepath.Join(dir, "agent.db")}
	call := append([]string{"call", "--url", endpoint, "--yes", "--key", "ord-q"}, pay...)

	// No one approves before agentctlAs returns: a call that waited for an
	// approval would end in its guard and fail there.
	o := agentctlAs(t, agent, "alice", call...)
	if o.code != exitAwaiting || !strings.Contains(o.stderr, "at the server it was sent to") || !strings.Contains(o.stderr, "ord-q") {
		t.Fatalf("call through the queueing proxy: exit %d, stderr %q; want exit %d naming the proxy's key", o.code, o.stderr, exitAwaiting)
	}
	if n := paymentsIn(t, db); n != 0 {
		t.Fatalf("payments before the approval = %d; want 0", n)
	}
	agentctlAs(t, env, "bob", "ledger", "approve", "ord-q", "--reason", "checked").wantExit(t, exitOK)
	for range 2 {
		agentctlAs(t, agent, "alice", call...).wantExit(t, exitOK)
	}
	if n := paymentsIn(t, db); n != 1 {
		t.Fatalf("payments after the approval = %d; want 1", n)
	}
}

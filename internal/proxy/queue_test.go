package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// queueFixture is a proxy whose policy queues pay_invoice, on a SQLite
// file that a second store (the approver's process) also opens, both on
// one clock.
type queueFixture struct {
	p        *proxy.Proxy
	u        *upstream
	h        *host
	approver ledger.Store
	clock    *ledgertest.Clock
}

func newQueueProxy(t *testing.T, expiry time.Duration) *queueFixture {
	t.Helper()
	f := &queueFixture{u: newUpstream(), clock: ledgertest.NewClock(time.Now().UTC().Truncate(time.Microsecond))}
	path := filepath.Join(t.TempDir(), "ledger.db")
	open := func() ledger.Store {
		st, err := sqlite.Open(context.Background(), path, &sqlite.Options{Now: f.clock.Now})
		if err != nil {
			t.Fatalf("sqlite.Open = %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st := open()
	f.approver = open()
	policy := &confirm.Policy{Rules: []confirm.Rule{
		{Tool: "pay_invoice", Action: confirm.Queue, Expiry: expiry},
		{Tool: "*", Action: confirm.Allow},
	}}
	f.p = startProxy(t, st, f.u.transport, &proxy.Options{
		Policy: policy, Session: "agent-1",
		Client: &client.Options{Retry: fastRetry, Now: f.clock.Now, Requester: "agent-1"},
	})
	// A host without elicitation: no one to ask now, which a queue does
	// not need.
	f.h = connectHost(t, f.p, hostOptions{})
	return f
}

// queued makes the call and checks the answer the model gets without an
// approval: none is given, and the clock does not move, so a call that
// waited for one would end only in the host call's guard, which fails.
func (f *queueFixture) queued(t *testing.T, invoice string) string {
	t.Helper()
	res := f.h.call(t, "pay_invoice", map[string]any{"invoice": invoice}, nil)
	key, state := errorMeta(res)
	text := resultText(res)
	if !res.IsError || state != ledger.StatePendingApproval || key == "" {
		t.Fatalf("queued call = %q (isError %v, marker %q %s); want an error result marked PENDING_APPROVAL with the key", text, res.IsError, key, state)
	}
	for _, want := range []string{key, "approval", "ledger_status", "Nothing has run"} {
		if !strings.Contains(text, want) {
			t.Errorf("queued call's text %q does not say %q", text, want)
		}
	}
	if n := f.u.payments.Load(); n != 0 {
		t.Fatalf("pay_invoice ran %d times after queueing; want 0", n)
	}
	return key
}

// status asks ledger_status through the proxy and returns its state and text.
func (f *queueFixture) status(t *testing.T, key string) (string, string) {
	t.Helper()
	res := f.h.call(t, "ledger_status", map[string]any{"key": key}, nil)
	if res.IsError {
		t.Fatalf("ledger_status(%s) = %q; want a status", key, resultText(res))
	}
	sc, _ := res.StructuredContent.(map[string]any)
	call, _ := sc["call"].(map[string]any)
	state, _ := call["state"].(string)
	return state, resultText(res)
}

func (f *queueFixture) decide(t *testing.T, key string, d client.Decision) {
	t.Helper()
	d.Now = f.clock.Now
	if _, err := client.Decide(context.Background(), f.approver, ledger.ID{Layer: ledger.LayerProxy, Tenant: "default", Tool: "pay_invoice", Key: key}, d); err != nil {
		t.Fatalf("Decide(%s) = %v", key, err)
	}
}

func TestProxyQueuedCallApproved(t *testing.T) {
	f := newQueueProxy(t, 0)
	key := f.queued(t, "INV-10")
	if state, text := f.status(t, key); state != string(ledger.StatePendingApproval) || !strings.Contains(text, "waits for a person's approval") {
		t.Errorf("ledger_status before the decision = %s %q; want PENDING_APPROVAL, waiting", state, text)
	}
	// Asking again before a decision changes nothing.
	if k, state := errorMeta(f.h.call(t, "pay_invoice", map[string]any{"invoice": "INV-10"}, nil)); k != key || state != ledger.StatePendingApproval {
		t.Errorf("repeat before the decision = %q %s; want %q still PENDING_APPROVAL", k, state, key)
	}
	f.decide(t, key, client.Decision{Approve: true, By: "bob", Reason: "invoice checked"})
	if state, text := f.status(t, key); state != string(ledger.StatePendingApproval) || !strings.Contains(text, "approved by bob") || !strings.Contains(text, "make the same call again") {
		t.Errorf("ledger_status after the approval = %s %q; want PENDING_APPROVAL, approved by bob, call again", state, text)
	}
	if n := f.u.payments.Load(); n != 0 {
		t.Fatalf("pay_invoice ran %d times on the approval alone; want 0 until the call is made again", n)
	}
	// The model re-plans the same call (no key): it runs, once.
	res := f.h.call(t, "pay_invoice", map[string]any{"invoice": "INV-10"}, nil)
	if res.IsError || resultText(res) != "paid INV-10" {
		t.Fatalf("approved call = %q (isError %v); want the payment", resultText(res), res.IsError)
	}
	again := f.h.call(t, "pay_invoice", map[string]any{"invoice": "INV-10"}, nil)
	if m, ok := replayMarker(again); !ok || m.Key != key {
		t.Errorf("call after the run = %q marker %+v, %v; want a replay of %s", resultText(again), m, ok, key)
	}
	// The same key from a host that sends it: a replay too.
	keyed := f.h.call(t, "pay_invoice", map[string]any{"invoice": "INV-10"}, mcp.Meta{client.MetaKey: key})
	if m, ok := replayMarker(keyed); !ok || m.Key != key {
		t.Errorf("call with the key = %q marker %+v, %v; want a replay of %s", resultText(keyed), m, ok, key)
	}
	if n := f.u.payments.Load(); n != 1 {
		t.Fatalf("pay_invoice ran %d times; want exactly 1", n)
	}
	if state, _ := f.status(t, key); state != string(ledger.StateSucceeded) {
		t.Errorf("ledger_status after the run = %s; want SUCCEEDED", state)
	}
}

func TestProxyQueuedCallDenied(t *testing.T) {
	f := newQueueProxy(t, 0)
	key := f.queued(t, "INV-11")
	f.decide(t, key, client.Decision{By: "bob", Reason: "duplicate invoice"})
	if state, text := f.status(t, key); state != string(ledger.StateDenied) || !strings.Contains(text, "duplicate invoice") {
		t.Errorf("ledger_status after the denial = %s %q; want DENIED with the reason", state, text)
	}
	res := f.h.call(t, "pay_invoice", map[string]any{"invoice": "INV-11"}, nil)
	if k, state := errorMeta(res); !res.IsError || k != key || state != ledger.StateDenied || !strings.Contains(resultText(res), "duplicate invoice") {
		t.Errorf("re-run after the denial = %q (isError %v, %q %s); want the denial of %s with its reason", resultText(res), res.IsError, k, state, key)
	}
	if n := f.u.payments.Load(); n != 0 {
		t.Fatalf("pay_invoice ran %d times; want 0", n)
	}
}

func TestProxyQueuedCallExpires(t *testing.T) {
	f := newQueueProxy(t, 5*time.Minute)
	key := f.queued(t, "INV-12")
	f.clock.Advance(5 * time.Minute)
	d := client.Decision{Approve: true, By: "bob", Now: f.clock.Now}
	if _, err := client.Decide(context.Background(), f.approver, ledger.ID{Layer: ledger.LayerProxy, Tenant: "default", Tool: "pay_invoice", Key: key}, d); err == nil {
		t.Fatalf("Decide after the expiry = nil; want an error")
	}
	state, text := f.status(t, key)
	if state != string(ledger.StateRejected) || !strings.Contains(text, "expired") {
		t.Errorf("ledger_status after the expiry = %s %q; want REJECTED, the approval expired", state, text)
	}
	// Nothing ran and nothing was decided: a new call is queued afresh,
	// under the same key.
	if again := f.queued(t, "INV-12"); again != key {
		t.Errorf("call after the expiry queued under %s; want %s again", again, key)
	}
	if n := f.u.payments.Load(); n != 0 {
		t.Fatalf("pay_invoice ran %d times; want 0", n)
	}
}

// A host that sends its own key is a runtime with a ledger of its own (an
// mcpledger client, another proxy): it gets the wire error of a call in
// progress, which its ledger retries and never stores as final, with the
// state and the key in data; once approved, its call with the key runs.
func TestProxyQueuedCallFromAKeyedHost(t *testing.T) {
	f := newQueueProxy(t, 0)
	_, err := f.h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "pay_invoice",
		Arguments: map[string]any{"invoice": "INV-13"}, Meta: mcp.Meta{client.MetaKey: "inv-13"}})
	je, ok := errs.AsType[*jsonrpc.Error](err)
	var data wire.ErrorData
	if ok {
		ok = json.Unmarshal(je.Data, &data) == nil
	}
	if !ok || je.Code != ledger.CodeInProgress || data.State != string(ledger.StatePendingApproval) || data.Key != "inv-13" || retry.Classify(client.Neutral(err)) != retry.Transient {
		t.Fatalf("queued call with a key = %v (data %+v); want -31002 in progress, PENDING_APPROVAL, key inv-13", err, data)
	}

	// An mcpledger client as the host, on a ledger of its own.
	outer := newStore(t)
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := f.p.Server().Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return mcp.NewClient(&mcp.Implementation{Name: "outer", Version: "v1"}, nil).Connect(ctx, ct, nil)
	}
	c, err := client.Dial(context.Background(), connect, outer, &client.Options{Retry: &retry.Policy{MaxAttempts: 5, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}, Session: "outer",
		// The proxy's policy is the one that queues.
		Policy: &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}})
	if err != nil {
		t.Fatalf("client.Dial = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := client.WithKey(context.Background(), "inv-14")
	args := &mcp.CallToolParams{Name: "pay_invoice", Arguments: map[string]any{"invoice": "INV-14"}}
	_, err = c.Call(ctx, args)
	ce, ok := errs.AsType[*client.Error](err)
	if !errors.Is(err, client.ErrAwaitingApproval) || !ok || !strings.Contains(ce.Text, "inv-14") || !strings.Contains(ce.Text, "approval") {
		t.Fatalf("outer call before the approval = %v; want client.ErrAwaitingApproval with a text that names the key", err)
	}
	if r, err := outer.Get(context.Background(), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "pay_invoice", Key: "inv-14"}); err != nil || r.Attempts != 1 {
		t.Fatalf("outer record = %+v, %v; want one attempt (a wait for a person is not retried)", r, err)
	}
	if r, err := outer.Get(context.Background(), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "pay_invoice", Key: "inv-14"}); err != nil || r.State.Final() {
		t.Fatalf("outer record before the approval = %+v, %v; want a state that is not final", r, err)
	}
	f.decide(t, "inv-14", client.Decision{Approve: true, By: "bob"})
	out, err := c.Call(ctx, args)
	if err != nil || out.Result.IsError || resultText(out.Result) != "paid INV-14" {
		t.Fatalf("outer call after the approval = %+v, %v; want the payment", out, err)
	}
	if n := f.u.payments.Load(); n != 1 {
		t.Fatalf("pay_invoice ran %d times; want 1", n)
	}
}

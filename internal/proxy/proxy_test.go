//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package proxy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

func TestToolListMerged(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx := context.Background()

	var names []string
	for tool, err := range h.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("Tools = %v", err)
		}
		names = append(names, tool.Name)
	}
	want := []string{"add_note", "ask_model", "ask_user", "chatty", "ledger_list", "ledger_status", "pay_invoice", "strict", "wait_forever"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools/list = %v; want %v", names, want)
	}
	ir := h.cs.InitializeResult()
	if ir.Instructions != "notes server instructions" {
		t.Errorf("instructions = %q; want the upstream's", ir.Instructions)
	}
	if _, ok := ir.Capabilities.Experimental[wire.Capability]; !ok {
		t.Errorf("capabilities.experimental = %v; want %s", ir.Capabilities.Experimental, wire.Capability)
	}
	if ir.Capabilities.Prompts == nil || ir.Capabilities.Resources == nil || ir.Capabilities.Completions == nil {
		t.Errorf("capabilities = %+v; want the upstream's prompts, resources and completions", ir.Capabilities)
	}
	if ir.ProtocolVersion >= "2026-07-28" {
		t.Errorf("negotiated %s with the host; want at most 2025-11-25", ir.ProtocolVersion)
	}
}

// The host is promised what the upstream offers and no more.
func TestCapabilitiesFollowTheUpstream(t *testing.T) {
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "v1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{}})
	mcp.AddTool(bare, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text("ok"), nil, nil
	})
	tr := func(ctx context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		_, err := bare.Connect(ctx, st, nil)
		return ct, err
	}
	p := startProxy(t, newStore(t), tr, nil)
	h := connectHost(t, p, hostOptions{})
	caps := h.cs.InitializeResult().Capabilities
	if caps.Prompts != nil || caps.Resources != nil || caps.Completions != nil || caps.Logging != nil {
		t.Errorf("capabilities = prompts %v, resources %v, completions %v, logging %v; want none, as the upstream",
			caps.Prompts, caps.Resources, caps.Completions, caps.Logging)
	}
	if caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities.tools = %+v; want listChanged", caps.Tools)
	}
}

func TestDuplicateIsReplayed(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})

	first := h.call(t, "add_note", map[string]any{"text": "milk"}, nil)
	if first.IsError {
		t.Fatalf("first add_note = %q; want success", resultText(first))
	}
	if _, replayed := replayMarker(first); replayed {
		t.Errorf("first add_note carries a replay marker; want a fresh execution")
	}
	// The model re-plans the same call: the ledger answers it.
	second := h.call(t, "add_note", map[string]any{"text": "milk"}, nil)
	m, replayed := replayMarker(second)
	if !replayed {
		t.Fatalf("second add_note = %q without a replay marker; want a replay", resultText(second))
	}
	if m.State != ledger.StateSucceeded || resultText(second) != resultText(first) {
		t.Errorf("replay = %q (%s); want %q (SUCCEEDED)", resultText(second), m.State, resultText(first))
	}
	if n := u.notes.Load(); n != 1 {
		t.Errorf("add_note ran %d times; want 1", n)
	}
	// Other arguments are another operation.
	h.call(t, "add_note", map[string]any{"text": "eggs"}, nil)
	if n := u.notes.Load(); n != 2 {
		t.Errorf("add_note ran %d times after a different note; want 2", n)
	}
}

func TestHostKey(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	key := mcp.Meta{client.MetaKey: "note-7"}

	h.call(t, "add_note", map[string]any{"text": "bread"}, key)
	again := h.call(t, "add_note", map[string]any{"text": "bread"}, key)
	if m, ok := replayMarker(again); !ok || m.Key != "note-7" {
		t.Errorf("same key again = marker %+v, %v; want a replay of note-7", m, ok)
	}
	// A host that sends keys is answered like a key-aware server: with
	// the wire error its client classifies, not a result it would store.
	_, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": "butter"}, Meta: key})
	if retry.Reason(client.Neutral(err)) != ledger.ReasonKeyReused || retry.Classify(client.Neutral(err)) != retry.Permanent {
		t.Errorf("key reused = %v; want -31001 key_reused", err)
	}
	if n := u.notes.Load(); n != 1 {
		t.Errorf("add_note ran %d times; want 1", n)
	}
}

func TestRequestErrorsStayProtocolErrors(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	tests := []struct{ name, tool string }{
		{"unknown tool", "no_such_tool"},
		{"upstream rejects the request", "strict"},
		{"the same request again: nothing ran, so it is sent again", "strict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"x": 1}})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("CallTool(%q) = %v; want JSON-RPC %d", tc.tool, err, jsonrpc.CodeInvalidParams)
			}
		})
	}
	if n := u.strict.Load(); n != 2 {
		t.Errorf("strict was called %d times; want 2 (a rejection spends no key)", n)
	}
}

func TestConfirmation(t *testing.T) {
	approve := func(choice string) func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return func(*mcp.ElicitRequest) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choice, "reason": "test says " + choice}}
		}
	}
	tests := []struct {
		name       string
		host       hostOptions
		terminal   confirm.Confirmer
		policyFile string
		wantRun    int64
		wantAsked  int64
		wantText   string // in the result of a denied call
		wantState  ledger.State
	}{
		{name: "host approves", host: hostOptions{elicit: approve("approve_once")}, wantRun: 1, wantAsked: 1},
		{name: "host denies", host: hostOptions{elicit: approve("deny")}, wantRun: 0, wantAsked: 1, wantText: "test says deny", wantState: ledger.StateDenied},
		{name: "host declines", host: hostOptions{elicit: func(*mcp.ElicitRequest) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }},
			wantRun: 0, wantAsked: 1, wantText: "declined", wantState: ledger.StateDenied},
		{name: "terminal when the host cannot elicit", terminal: confirm.Static{Answer: confirm.Answer{Decision: ledger.DecisionApproved, By: "terminal:test"}},
			wantRun: 1},
		{name: "no one to ask", policyFile: "/etc/agent/policy.json", wantRun: 0, wantText: "allow pay_invoice in the policy file /etc/agent/policy.json", wantState: ledger.StateRejected},
		{name: "no one to ask, built-in rules", wantRun: 0, wantText: "--policy", wantState: ledger.StateRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream()
			p := startProxy(t, newStore(t), u.transport, &proxy.Options{Terminal: tc.terminal, PolicyFile: tc.policyFile})
			h := connectHost(t, p, tc.host)
			res := h.call(t, "pay_invoice", map[string]any{"invoice": "INV-1"}, nil)
			if got := u.payments.Load(); got != tc.wantRun {
				t.Errorf("pay_invoice ran %d times; want %d (result %q)", got, tc.wantRun, resultText(res))
			}
			if got := h.elicits.Load(); got != tc.wantAsked {
				t.Errorf("host was asked %d times; want %d", got, tc.wantAsked)
			}
			if tc.wantRun == 0 {
				if !res.IsError || !strings.Contains(resultText(res), tc.wantText) {
					t.Errorf("denied call = %q (isError %v); want an error result containing %q", resultText(res), res.IsError, tc.wantText)
				}
				if _, state := errorMeta(res); state != tc.wantState {
					t.Errorf("error marker state = %q; want %s", state, tc.wantState)
				}
			}
			// A repeat never asks again: it replays the decision (or, with no
			// one to ask, meets no one again).
			h.call(t, "pay_invoice", map[string]any{"invoice": "INV-1"}, nil)
			if got := h.elicits.Load(); got != tc.wantAsked {
				t.Errorf("host was asked %d times after a repeat; want still %d", got, tc.wantAsked)
			}
			if got := u.payments.Load(); got != tc.wantRun {
				t.Errorf("pay_invoice ran %d times after a repeat; want still %d", got, tc.wantRun)
			}
		})
	}
}

func TestElicitationMessageNamesTheCall(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{elicit: func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve_session"}}
	}})
	h.call(t, "pay_invoice", map[string]any{"invoice": "INV-2"}, nil)
	msg := <-h.messages
	for _, want := range []string{"pay_invoice", "notes", "INV-2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("elicitation message %q does not mention %q", msg, want)
		}
	}
	// Approved for the session: another invoice does not ask.
	h.call(t, "pay_invoice", map[string]any{"invoice": "INV-3"}, nil)
	if got := h.elicits.Load(); got != 1 {
		t.Errorf("host was asked %d times; want 1 (approved for the session)", got)
	}
	if got := u.payments.Load(); got != 2 {
		t.Errorf("pay_invoice ran %d times; want 2", got)
	}
}

func TestLostResponse(t *testing.T) {
	tests := []struct {
		name       string
		idempotent bool // the upstream honours keys
		wantError  bool
		wantState  ledger.State
	}{
		{name: "key-aware upstream: retried and answered from its ledger", idempotent: true},
		{name: "plain upstream: UNKNOWN, never re-sent", wantError: true, wantState: ledger.StateUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mcptest.New(&mcptest.Options{Idempotent: tc.idempotent})
			tr := func(context.Context) (mcp.Transport, error) { return s.ClientTransport(t), nil }
			p := startProxy(t, newStore(t), tr, nil)
			h := connectHost(t, p, hostOptions{})
			s.Script(mcptest.DropAfterExecute())
			args := map[string]any{"id": "order-1", "amount": 10}
			res := h.call(t, "write", args, nil)
			if res.IsError != tc.wantError {
				t.Fatalf("write after a lost response = %q (isError %v); want isError %v", resultText(res), res.IsError, tc.wantError)
			}
			if tc.wantError {
				if _, state := errorMeta(res); state != tc.wantState {
					t.Errorf("error marker state = %q; want %s", state, tc.wantState)
				}
				if !strings.Contains(resultText(res), "unknown") {
					t.Errorf("error text %q does not say the outcome is unknown", resultText(res))
				}
			}
			// The model asks again: still one execution.
			h.call(t, "write", args, nil)
			if n := s.TotalExecutions(); n != 1 {
				t.Errorf("write executed %d times; want 1", n)
			}
		})
	}
}

func TestCancellationReachesUpstream(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	h := connectHost(t, p, hostOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_forever", Arguments: map[string]any{}})
		done <- err
	}()
	wait(t, u.started, "wait_forever did not start")
	cancel()
	wait(t, u.cancelled, "the upstream handler was not cancelled")
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled CallTool = %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled CallTool did not return")
	}
}

package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/planner/ledgertools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const createArgs = `{"sku":"A-1","qty":2,"api_key":"s3cret"}`

// The model reads every state ledger_list can filter on, REJECTED
// included, each with its row's meaning, in the schema tools/list sends.
func TestListSchemaNamesEveryState(t *testing.T) {
	st := openStore(t, newClock())
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools = %v", err)
	}
	var desc string
	for _, tool := range res.Tools {
		if tool.Name != planner.ListTool {
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("the input schema of %s = %s: %v", planner.ListTool, raw, err)
		}
		desc = schema.Properties["state"].Description
	}
	for _, r := range ledger.Rows() {
		if want := string(r.State) + " (" + r.Means + ")"; !strings.Contains(desc, want) {
			t.Errorf("the state property of %s reads %q; want it to contain %q", planner.ListTool, desc, want)
		}
	}
}

func TestToolsAnnotated(t *testing.T) {
	st := openStore(t, newClock())
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools = %v", err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	for _, name := range []string{planner.StatusTool, planner.ListTool} {
		tool := got[name]
		if tool == nil {
			t.Fatalf("ListTools = %v; want %s", res.Tools, name)
		}
		a := tool.Annotations
		if a == nil || !a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s annotations = %+v; want read-only, not destructive, closed world", name, a)
		}
		if tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("%s has no output schema or description", name)
		}
	}
	if len(res.Tools) != 2 {
		t.Errorf("ListTools returned %d tools; want only the two ledger tools", len(res.Tools))
	}
}

func TestStatus(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	seed(t, st, call{tenant: "acme", session: "s1", tool: "create_order", key: "o-1", args: createArgs,
		result: `{"content":[{"type":"text","text":"order 42 created"}],"structuredContent":{"id":42}}`})
	seed(t, st, call{tenant: "acme", session: "s1", tool: "send_mail", key: "m-1", args: `{"to":"bob"}`, state: ledger.StateUnknown})
	seed(t, st, call{tenant: "acme", session: "s1", tool: "pay", key: "p-1", args: `{"amount":5}`, state: ledger.StateDenied, reason: "over\nbudget"})
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))

	cases := []struct {
		name      string
		args      map[string]any
		wantKey   string
		wantState ledger.State
		inText    []string
	}{
		{name: "by key and tool", args: map[string]any{"key": "o-1", "tool": "create_order"},
			wantKey: "o-1", wantState: ledger.StateSucceeded, inText: []string{"create_order, key o-1: SUCCEEDED", "succeeded", "order 42 created", "2026-03-01T09:00:00Z"}},
		{name: "by key alone", args: map[string]any{"key": "m-1"},
			wantKey: "m-1", wantState: ledger.StateUnknown, inText: []string{"unknown", "reconcile"}},
		{name: "by arguments in another spelling", args: map[string]any{"tool": "create_order", "arguments": map[string]any{"qty": 2.0, "api_key": "s3cret", "sku": "A-1", "request_id": "r-9"}},
			wantKey: "o-1", wantState: ledger.StateSucceeded},
		{name: "denied with reason", args: map[string]any{"key": "p-1", "tool": "pay"},
			wantKey: "p-1", wantState: ledger.StateDenied, inText: []string{"refused (reason: over budget)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out planner.StatusOutput
			text, isErr := callTool(t, cs, planner.StatusTool, tc.args, &out)
			if isErr {
				t.Fatalf("ledger_status(%v) is an error: %s", tc.args, text)
			}
			if !out.Found || out.Call == nil || out.Call.Key != tc.wantKey || out.Call.State != string(tc.wantState) || out.Matches != 1 {
				t.Fatalf("ledger_status(%v) = %+v; want found %s in %s", tc.args, out, tc.wantKey, tc.wantState)
			}
			for _, frag := range tc.inText {
				if !strings.Contains(text, frag) {
					t.Errorf("ledger_status(%v) text = %q; want %q", tc.args, text, frag)
				}
			}
			if strings.Contains(text, "s3cret") {
				t.Errorf("ledger_status text shows a secret: %q", text)
			}
		})
	}

	t.Run("structured result and redacted arguments", func(t *testing.T) {
		var out planner.StatusOutput
		callTool(t, cs, planner.StatusTool, map[string]any{"key": "o-1", "tool": "create_order"}, &out)
		res, _ := json.Marshal(out.Call.Result)
		want := `{"content":[{"type":"text","text":"order 42 created"}],"structuredContent":{"id":42}}`
		if got, _ := args.Canonical(res); string(got) != mustCanonical(t, want) {
			t.Errorf("call.result = %s; want %s", res, want)
		}
		doc, _ := json.Marshal(out.Call.Arguments)
		if strings.Contains(string(doc), "s3cret") || !strings.Contains(string(doc), redact.Placeholder) {
			t.Errorf("call.arguments = %s; want the stored, redacted arguments", doc)
		}
		if out.Call.Attempts != 1 || out.Call.CreatedAt != "2026-03-01T09:00:00Z" {
			t.Errorf("call = %+v; want 1 attempt created 2026-03-01T09:00:00Z", out.Call)
		}
	})
}

func mustCanonical(t *testing.T, s string) string {
	t.Helper()
	c, err := args.Canonical(json.RawMessage(s))
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

func TestStatusLargeResultStaysStructured(t *testing.T) {
	st := openStore(t, newClock())
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 20<<10) + `"}]}`
	seed(t, st, call{tenant: "acme", session: "s1", tool: "export", key: "e-1", result: big})
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))
	var out planner.StatusOutput
	text, _ := callTool(t, cs, planner.StatusTool, map[string]any{"key": "e-1"}, &out)
	if strings.Contains(text, "xxxx") || !strings.Contains(text, "structured content") {
		t.Errorf("ledger_status text = %.200q; want a pointer to the structured content, not the result", text)
	}
	if res, _ := json.Marshal(out.Call.Result); len(res) < 20<<10 {
		t.Errorf("call.result is %d bytes; want the whole result", len(res))
	}
}

func TestStatusSeveralMatches(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	seed(t, st, call{tenant: "acme", session: "s1", tool: "create_order", key: "same", args: `{"a":1}`})
	c.Advance(1)
	seed(t, st, call{tenant: "acme", session: "s1", tool: "refund", key: "same", args: `{"a":1}`, state: ledger.StateProcessing})
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))
	var out planner.StatusOutput
	text, _ := callTool(t, cs, planner.StatusTool, map[string]any{"key": "same"}, &out)
	if out.Matches != 2 || out.Call.Tool != "refund" || !strings.Contains(text, "2 calls match") {
		t.Fatalf("ledger_status(key same) = %+v, %q; want the newest of 2 matches", out, text)
	}
}

func TestStatusBadInput(t *testing.T) {
	st := openStore(t, newClock())
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{name: "nothing", args: map[string]any{}, want: "needs a key"},
		{name: "arguments without tool", args: map[string]any{"arguments": map[string]any{"a": 1}}, want: "needs a key"},
		{name: "invalid key", args: map[string]any{"key": "a b"}, want: "invalid idempotency key"},
		{name: "wrong type", args: map[string]any{"key": 7}, want: "key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text, isErr := callTool(t, cs, planner.StatusTool, tc.args, nil)
			if !isErr || !strings.Contains(text, tc.want) {
				t.Fatalf("ledger_status(%v) = %q, isError %v; want an error mentioning %q", tc.args, text, isErr, tc.want)
			}
		})
	}
}

func TestList(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	for i, s := range []ledger.State{ledger.StateSucceeded, ledger.StateFailed, ledger.StateUnknown, ledger.StateSucceeded, ledger.StateProcessing} {
		c.Advance(1e9)
		seed(t, st, call{tenant: "acme", session: "s1", tool: "t", key: "k-" + string(rune('a'+i)), state: s})
	}
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))
	cases := []struct {
		name     string
		args     map[string]any
		wantKeys []string
		wantMore bool
	}{
		{name: "all, newest first", args: map[string]any{}, wantKeys: []string{"k-e", "k-d", "k-c", "k-b", "k-a"}},
		{name: "limit", args: map[string]any{"limit": 2}, wantKeys: []string{"k-e", "k-d"}, wantMore: true},
		{name: "state", args: map[string]any{"state": "succeeded"}, wantKeys: []string{"k-d", "k-a"}},
		{name: "state none", args: map[string]any{"state": "DENIED"}, wantKeys: []string{}},
		{name: "zero limit is the default", args: map[string]any{"limit": 0}, wantKeys: []string{"k-e", "k-d", "k-c", "k-b", "k-a"}},
		{name: "huge limit is capped", args: map[string]any{"limit": 100000}, wantKeys: []string{"k-e", "k-d", "k-c", "k-b", "k-a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out planner.ListOutput
			text, isErr := callTool(t, cs, planner.ListTool, tc.args, &out)
			if isErr {
				t.Fatalf("ledger_list(%v) is an error: %s", tc.args, text)
			}
			var keys []string
			for _, call := range out.Calls {
				keys = append(keys, call.Key)
				if !strings.Contains(text, "key "+call.Key+": "+call.State) {
					t.Errorf("ledger_list text = %q; want a line for %s", text, call.Key)
				}
				if call.Result != nil || call.Arguments != nil {
					t.Errorf("ledger_list call %s shows result or arguments; want summary only", call.Key)
				}
			}
			if strings.Join(keys, ",") != strings.Join(tc.wantKeys, ",") || out.More != tc.wantMore {
				t.Fatalf("ledger_list(%v) = %v more=%v; want %v more=%v", tc.args, keys, out.More, tc.wantKeys, tc.wantMore)
			}
			if len(keys) == 0 && !strings.Contains(text, "No calls") {
				t.Errorf("ledger_list text = %q; want it to say there are none", text)
			}
		})
	}
	t.Run("bad state", func(t *testing.T) {
		text, isErr := callTool(t, cs, planner.ListTool, map[string]any{"state": "DONE"}, nil)
		if !isErr || !strings.Contains(text, "unknown state") {
			t.Fatalf("ledger_list(state DONE) = %q, %v; want an error naming the states", text, isErr)
		}
	})
}

// TestIsolation tries every way the ledger tools offer to read a record of
// another tenant or session. Each must answer exactly as for a key that was
// never used.
func TestIsolation(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	const args = `{"to":"bob","amount":5}`
	seed(t, st, call{tenant: "acme", session: "mine", tool: "pay", key: "own", args: `{"to":"ann"}`})
	foreign := []call{
		{tenant: "acme", session: "other", tool: "pay", key: "k-session", args: args},
		{tenant: "globex", session: "mine", tool: "pay", key: "k-tenant", args: args},
		{tenant: "globex", session: "other", tool: "pay", key: "k-both", args: args},
		{tenant: "acme", session: "", tool: "pay", key: "k-nosession", args: args},
	}
	for _, f := range foreign {
		seed(t, st, f)
	}
	cs := connect(t, ledgertools.NewServer(st, "acme", "mine", nil))

	for _, f := range foreign {
		t.Run(f.key, func(t *testing.T) {
			for _, probe := range []struct {
				name  string
				args  map[string]any
				never map[string]any // the same question about a key never used
			}{
				{name: "by key", args: map[string]any{"key": f.key}, never: map[string]any{"key": "never"}},
				{name: "by key and tool", args: map[string]any{"key": f.key, "tool": "pay"}, never: map[string]any{"key": "never", "tool": "pay"}},
			} {
				var out planner.StatusOutput
				text, isErr := callTool(t, cs, planner.StatusTool, probe.args, &out)
				neverText, _ := callTool(t, cs, planner.StatusTool, probe.never, nil)
				if isErr || out.Found || out.Call != nil || strings.ReplaceAll(text, f.key, "never") != neverText {
					t.Errorf("ledger_status %s(%v) = %q, %+v; want the answer for an unused key, %q", probe.name, probe.args, text, out, neverText)
				}
			}
		})
	}
	t.Run("by arguments", func(t *testing.T) {
		var argsMap map[string]any
		if err := json.Unmarshal([]byte(args), &argsMap); err != nil {
			t.Fatal(err)
		}
		var out planner.StatusOutput
		text, _ := callTool(t, cs, planner.StatusTool, map[string]any{"tool": "pay", "arguments": argsMap}, &out)
		if out.Found || !strings.HasPrefix(text, "No call of pay with these arguments") {
			t.Errorf("ledger_status(pay, %s) = %q, %+v; want not found", args, text, out)
		}
	})
	t.Run("scope fields in the input", func(t *testing.T) {
		// The scope comes from the server side only; naming another
		// tenant or session in the arguments changes nothing.
		args := map[string]any{"key": "k-tenant", "tool": "pay", "tenant": "globex", "session": "other", "_meta": map[string]any{"tenant": "globex"}}
		var out planner.StatusOutput
		text, _ := callTool(t, cs, planner.StatusTool, args, &out)
		if out.Found || strings.Contains(text, "SUCCEEDED") {
			t.Errorf("ledger_status(%v) = %q; want no record", args, text)
		}
	})
	t.Run("list", func(t *testing.T) {
		for _, q := range []map[string]any{{}, {"limit": 100}, {"state": "SUCCEEDED"}} {
			var out planner.ListOutput
			text, _ := callTool(t, cs, planner.ListTool, q, &out)
			if len(out.Calls) != 1 || out.Calls[0].Key != "own" || out.More {
				t.Errorf("ledger_list(%v) = %+v; want only the own call", q, out)
			}
			for _, f := range foreign {
				if strings.Contains(text, f.key) {
					t.Errorf("ledger_list(%v) text = %q; shows %s", q, text, f.key)
				}
			}
		}
	})
	t.Run("own record is visible", func(t *testing.T) {
		var out planner.StatusOutput
		callTool(t, cs, planner.StatusTool, map[string]any{"key": "own", "tool": "pay"}, &out)
		if !out.Found || out.Call.Key != "own" {
			t.Fatalf("ledger_status(own) = %+v; want found (the probes above must be able to succeed)", out)
		}
	})
}

// TestScopePerConnection serves two connections from one server, as a proxy
// does, each scoped by its own session.
func TestScopePerConnection(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	seed(t, st, call{tenant: "acme", session: "alice", tool: "t", key: "a-1"})
	seed(t, st, call{tenant: "acme", session: "bob", tool: "t", key: "b-1"})

	scopes := map[*mcp.ServerSession]string{}
	server := mcp.NewServer(&mcp.Implementation{Name: "proxy", Version: "1"}, nil)
	ledgertools.Add(server, st, func(_ context.Context, req *mcp.CallToolRequest) (string, string, error) {
		session, ok := scopes[req.Session]
		if !ok {
			return "", "", errors.New("unknown connection")
		}
		return "acme", session, nil
	}, nil)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	sessions := map[string]*mcp.ClientSession{}
	for _, who := range []string{"alice", "bob", "stranger"} {
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		if who != "stranger" {
			scopes[ss] = who // written before any call of this connection
		}
		cs, err := client.Connect(ctx, clientT, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		sessions[who] = cs
	}
	for who, want := range map[string]string{"alice": "a-1", "bob": "b-1"} {
		var out planner.ListOutput
		callTool(t, sessions[who], planner.ListTool, nil, &out)
		if len(out.Calls) != 1 || out.Calls[0].Key != want {
			t.Errorf("ledger_list as %s = %+v; want only %s", who, out.Calls, want)
		}
	}
	text, isErr := callTool(t, sessions["stranger"], planner.ListTool, nil, nil)
	if !isErr || !strings.Contains(text, "unknown connection") {
		t.Errorf("ledger_list with a failing scope = %q, %v; want the scope's error", text, isErr)
	}
}

func TestScopeRefused(t *testing.T) {
	st := openStore(t, newClock())
	seed(t, st, call{tenant: "acme", session: "", tool: "t", key: "k"})
	cases := []struct {
		name            string
		tenant, session string
		want            string
	}{
		{name: "no session", tenant: "acme", session: "", want: "need a session"},
		{name: "bad tenant", tenant: "ac me", session: "s", want: "invalid tenant"},
		{name: "no tenant", tenant: "", session: "s", want: "invalid tenant"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, ledgertools.NewServer(st, tc.tenant, tc.session, nil))
			for _, q := range []struct {
				tool string
				args map[string]any
			}{{planner.ListTool, nil}, {planner.StatusTool, map[string]any{"key": "k"}}} {
				text, isErr := callTool(t, cs, q.tool, q.args, nil)
				if !isErr || !strings.Contains(text, tc.want) {
					t.Errorf("%s scoped to (%q, %q) = %q, %v; want an error mentioning %q", q.tool, tc.tenant, tc.session, text, isErr, tc.want)
				}
			}
		})
	}
}

// A call whose approval expired reads REJECTED to the model at once, as it
// does to a person (ledger.AsRead), before any sweep writes it so.
func TestStatusReadsALapsedApprovalRejected(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	seed(t, st, call{tenant: "acme", session: "s1", tool: "pay", key: "q-1", args: `{"amount":5}`, state: ledger.StatePendingApproval})
	tools := &planner.Tools{Store: st, Now: c.Now}
	sc := planner.Scope{Tenant: "acme", Session: "s1"}
	if _, out, err := tools.Status(context.Background(), sc, planner.StatusInput{Key: "q-1", Tool: "pay"}); err != nil || out.Call == nil || out.Call.State != string(ledger.StatePendingApproval) {
		t.Fatalf("Status before the approval's expiry = %+v, %v; want PENDING_APPROVAL", out.Call, err)
	}
	c.Advance(48 * time.Hour)
	text, out, err := tools.Status(context.Background(), sc, planner.StatusInput{Key: "q-1", Tool: "pay"})
	if err != nil || out.Call == nil || out.Call.State != string(ledger.StateRejected) || !strings.Contains(text, "did not run") {
		t.Errorf("Status after the approval's expiry = %q, %+v, %v; want REJECTED, did not run", text, out.Call, err)
	}
	_, list, err := tools.List(context.Background(), sc, planner.ListInput{})
	if err != nil || len(list.Calls) != 1 || list.Calls[0].State != string(ledger.StateRejected) {
		t.Errorf("List after the approval's expiry = %+v, %v; want the call REJECTED", list.Calls, err)
	}
	if rec, err := st.Get(context.Background(), ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "pay", Key: "q-1"}); err != nil || rec.State != ledger.StatePendingApproval {
		t.Errorf("stored record = %v, %v; want it left PENDING_APPROVAL (reading writes nothing)", rec, err)
	}
}

// ledger_status shows a call's reconciliation: the attempts that found
// nothing yet and when the next is due, or the resolution that settled it.
func TestStatusShowsReconciliation(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	ctx := context.Background()
	open := seed(t, st, call{tenant: "acme", session: "s1", tool: "pay", key: "p-open", args: `{"amount":5}`, state: ledger.StateUnknown})
	for range 2 {
		var err error
		open, err = ledger.Resolve(ctx, st, open, ledger.Finding{Verdict: ledger.VerdictUnknown, Method: ledger.MethodProbe, By: "find_payment", Evidence: "the probe timed out"})
		if err != nil {
			t.Fatal(err)
		}
	}
	done := seed(t, st, call{tenant: "acme", session: "s1", tool: "pay", key: "p-done", args: `{"amount":6}`, state: ledger.StateUnknown})
	if _, err := ledger.Resolve(ctx, st, done, ledger.Finding{Verdict: ledger.VerdictFound, Result: json.RawMessage(`{"content":[{"type":"text","text":"p_9"}]}`),
		Method: ledger.MethodReconciler, By: "payments", Evidence: "payment p_9 exists"}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ledgertools.NewServer(st, "acme", "s1", nil))

	var out planner.StatusOutput
	text, _ := callTool(t, cs, planner.StatusTool, map[string]any{"key": "p-open"}, &out)
	for _, want := range []string{"2 reconciliation attempts", "unknown by probe (find_payment)", "the probe timed out", "The next is due " + open.ReconcileAt.Format(time.RFC3339)} {
		if !strings.Contains(text, want) {
			t.Errorf("ledger_status(p-open) text = %q; want %q", text, want)
		}
	}
	if out.Call == nil || len(out.Call.Findings) != 2 || out.Call.NextReconcileAt == "" || out.Call.Reconciled != nil {
		t.Errorf("ledger_status(p-open) call = %+v; want 2 findings, the next attempt's time, no resolution", out.Call)
	}
	out = planner.StatusOutput{}
	text, _ = callTool(t, cs, planner.StatusTool, map[string]any{"key": "p-done"}, &out)
	if !strings.Contains(text, "Reconciled: found by reconciler (payments)") || !strings.Contains(text, "payment p_9 exists") {
		t.Errorf("ledger_status(p-done) text = %q; want the resolution", text)
	}
	if out.Call == nil || out.Call.Reconciled == nil || out.Call.Reconciled.Method != ledger.MethodReconciler || out.Call.NextReconcileAt != "" {
		t.Errorf("ledger_status(p-done) call = %+v; want the resolution by the reconciler", out.Call)
	}
}

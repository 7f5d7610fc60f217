package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/wire"
)

// A model that re-plans the same create_payment in three turns pays once,
// and is shown the same payment each time, the repeats marked as replays.
func TestReplannedPaymentPaysOnce(t *testing.T) {
	for _, transport := range []string{"stdio", "streamable HTTP"} {
		t.Run(transport, func(t *testing.T) {
			w := newWorld(t)
			api := newScriptedAPI(t,
				callTool("create_payment", payment(1250)),
				callTool("create_payment", payment(1250)),
				callTool("create_payment", payment(1250)),
				finish("Paid."),
			)
			cfg := w.config(api, w.stdio(t))
			if transport != "stdio" {
				cfg.Server, cfg.URL = nil, w.serveHTTP(t)
			}
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatalf("Run = %v", err)
			}
			if n := w.paid(t); n != 1 {
				t.Fatalf("payments = %d; want 1", n)
			}
			ids := w.paymentIDs(t)
			for i := 1; i <= 3; i++ {
				res := api.shown(t, i)
				if res.IsError || paymentID.FindString(res.Text) != ids[0] {
					t.Fatalf("turn %d: the model was shown %q (isError %v); want payment %s", i, res.Text, res.IsError, ids[0])
				}
				replay := strings.Contains(res.Text, "already ran")
				if replay != (i > 1) {
					t.Fatalf("turn %d: replay note shown = %v; want %v (text %q)", i, replay, i > 1, res.Text)
				}
			}
			// The model never sees the key argument: keys are the ledger's.
			for _, tool := range api.seen()[0].Tools {
				if _, ok := tool.InputSchema["properties"].(map[string]any)[wire.ArgKey]; ok {
					t.Fatalf("the model is offered %s with an %s argument", tool.Name, wire.ArgKey)
				}
			}
		})
	}
}

// The model asks ledger_status about its payment, beside the server's
// tools, and reads the record's state in words.
func TestLedgerStatusInWords(t *testing.T) {
	w := newWorld(t)
	api := newScriptedAPI(t,
		callTool("create_payment", payment(990)),
		callTool("ledger_status", map[string]any{"tool": "create_payment", "arguments": payment(990)}),
		finish("It went through."),
	)
	if _, err := Run(context.Background(), w.config(api, w.stdio(t))); err != nil {
		t.Fatalf("Run = %v", err)
	}
	names := []string{}
	for _, tool := range api.seen()[0].Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"create_payment", "get_payment", "ledger_status", "ledger_list"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools offered = %v; want %s among them", names, want)
		}
	}
	recs := w.records(t, "create_payment")
	if len(recs) != 1 {
		t.Fatalf("create_payment records = %d; want 1", len(recs))
	}
	status := api.shown(t, 2)
	if status.IsError || !strings.Contains(status.Text, "succeeded") || !strings.Contains(status.Text, recs[0].Key) {
		t.Fatalf("ledger_status showed %q; want that key %s succeeded", status.Text, recs[0].Key)
	}
	if n := len(w.records(t, "ledger_status")); n != 0 {
		t.Fatalf("ledger_status records = %d; asking the ledger records nothing", n)
	}
}

// A queued payment: the model is told to wait; a person approves it with
// agentctl from another process; the model's next identical call runs it,
// once.
func TestQueuedApprovalRunsOnce(t *testing.T) {
	w := newWorld(t)
	agentctl := program(t, "agentctl")
	var paidWhileQueued = -1
	api := newScriptedAPI(t,
		callTool("create_payment", payment(4200)),
		func(req apiRequest) reply {
			// Before the model's next turn, a person approves the call.
			res := req.results()
			if len(res) != 1 {
				return reply{text: "no tool result"}
			}
			paidWhileQueued = w.paid(t)
			cmd := exec.Command(agentctl, "--ledger", w.ledger, "ledger", "approve", keyOf(t, res[0].Text), "--tool", "create_payment", "--reason", "invoice checked")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("agentctl ledger approve = %v: %s", err, out)
			}
			return reply{tool: "create_payment", input: payment(4200)}
		},
		finish("Paid once approved."),
	)
	cfg := w.config(api, w.stdio(t))
	cfg.Yes = false // no one to ask: the default policy queues create_payment
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run = %v", err)
	}
	queued := api.shown(t, 1)
	if !queued.IsError || !strings.Contains(queued.Text, "awaits a person's approval") || paidWhileQueued != 0 {
		t.Fatalf("first answer %q (isError %v), %d payments meanwhile; want a wait for approval and none", queued.Text, queued.IsError, paidWhileQueued)
	}
	ran := api.shown(t, 2)
	ids := w.paymentIDs(t)
	if len(ids) != 1 || ran.IsError || paymentID.FindString(ran.Text) != ids[0] {
		t.Fatalf("after approval: shown %q, payments %v; want the one payment", ran.Text, ids)
	}
	if recs := w.records(t, "create_payment"); len(recs) != 1 || recs[0].State != ledger.StateSucceeded || recs[0].Approval == nil {
		t.Fatalf("records = %v; want one SUCCEEDED with the approval", recs)
	}
}

// A run that is one operation (-key): a second create_payment with other
// arguments reuses the key, the runner's tool gets the error the wrapper
// gives, as go-sdk's *jsonrpc.Error, and nothing runs.
func TestKeyReusedWithOtherArguments(t *testing.T) {
	w := newWorld(t)
	api := newScriptedAPI(t,
		callTool("create_payment", payment(1250)),
		callTool("create_payment", payment(2500)),
		finish("Stopped."),
	)
	cfg := w.config(api, w.stdio(t))
	cfg.Chain, cfg.Key = "", "invoice-1001"
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run = %v", err)
	}
	reused := api.shown(t, 2)
	if !reused.IsError || !strings.Contains(reused.Text, "invoice-1001 was already used for create_payment with different arguments") {
		t.Fatalf("the model was shown %q (isError %v); want the key reuse", reused.Text, reused.IsError)
	}
	if n := w.paid(t); n != 1 {
		t.Fatalf("payments = %d; want 1", n)
	}

}

// The MCP helper's tool, executed as the runner executes it, gets the
// error the wrapper gives for a reused key, as go-sdk's *jsonrpc.Error
// (-31001, the wrapper's text), and the second payment never runs.
func TestRunnerToolGetsTheWrappersError(t *testing.T) {
	ctx := client.WithKey(context.Background(), "invoice-1001")
	approve := confirm.Static{Answer: confirm.Answer{Decision: ledger.DecisionApproved, Reason: "test"}}

	mwWorld := newWorld(t)
	mw := client.NewMiddleware(openLedger(t, mwWorld.ledger), &client.Options{Confirmer: approve})
	t.Cleanup(func() { mw.Close() })
	mc := mcp.NewClient(&mcp.Implementation{Name: "runtime", Version: "v1"}, nil)
	mc.AddSendingMiddleware(mw.Wrap)
	protected := connect(t, mc, mwWorld.stdio(t))
	tools, err := betaTools(ctx, protected)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools, func(bt anthropic.BetaTool) bool { return bt.Name() == "create_payment" })
	if i < 0 {
		t.Fatal("no create_payment tool")
	}
	createPayment := tools[i]

	wrapWorld := newWorld(t)
	wrapper := client.New(connect(t, mcp.NewClient(&mcp.Implementation{Name: "wrapper", Version: "v1"}, nil), wrapWorld.stdio(t)),
		openLedger(t, wrapWorld.ledger), &client.Options{Confirmer: approve})
	t.Cleanup(func() { wrapper.Close() })

	var execErr, wrapErr error
	for _, cents := range []int{1250, 2500} {
		input, err := json.Marshal(payment(cents))
		if err != nil {
			t.Fatal(err)
		}
		_, execErr = createPayment.Execute(ctx, input)
		_, wrapErr = wrapper.CallTool(ctx, &mcp.CallToolParams{Name: "create_payment", Arguments: payment(cents)})
		if cents == 1250 && (execErr != nil || wrapErr != nil) {
			t.Fatalf("first payment: runner's tool = %v, wrapper = %v", execErr, wrapErr)
		}
	}
	ce, isCall := errors.AsType[*client.Error](wrapErr)
	if !isCall || !errors.Is(wrapErr, ledger.ErrKeyReused) {
		t.Fatalf("wrapper = %v; want a *client.Error with ledger.ErrKeyReused", wrapErr)
	}
	var je *jsonrpc.Error
	if !errors.As(execErr, &je) || je.Code != ledger.CodeKeyReused || je.Message != ce.Text {
		t.Fatalf("the runner's tool got %v; want -31001 %q, the wrapper's text", execErr, ce.Text)
	}
	if n := mwWorld.paid(t); n != 1 {
		t.Fatalf("payments behind the middleware = %d; want 1", n)
	}
}

// openLedger opens a SQLite ledger for the rest of the test.
func openLedger(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// connect starts the stdio server command with mc for the rest of the test.
func connect(t *testing.T, mc *mcp.Client, command []string) *mcp.ClientSession {
	t.Helper()
	s, err := mc.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(command[0], command[1:]...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

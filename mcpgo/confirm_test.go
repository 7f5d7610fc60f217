package mcpgo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/caller"
	lclient "github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcpgo"
)

// confirmer answers every question with answer and counts the questions.
type confirmer struct {
	answer confirm.Answer
	asked  atomic.Int64
}

func (c *confirmer) Confirm(context.Context, confirm.Request) (confirm.Answer, error) {
	c.asked.Add(1)
	return c.answer, nil
}

// destructive starts an in-process mcp-go server with a delete_order tool
// (destructive, as mcp-go marks tools by default) and returns a Client to
// it and the tool's execution count.
func destructive(t *testing.T, opts *mcpgo.ClientOptions) (*mcpgo.Client, *atomic.Int64, ledger.Store) {
	t.Helper()
	var runs atomic.Int64
	s := server.NewMCPServer("shop", "v1")
	s.AddTool(mcp.NewTool("delete_order", mcp.WithString("id")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return mcp.NewToolResultText("deleted " + req.GetString("id", "")), nil
		})
	store := openStore(t, "agent.db")
	c, err := mcpgo.New(inProcess(t, s), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &runs, store
}

// inProcess is an initialized mcp-go client of s over the in-process
// transport, wrapped for the ledger.
func inProcess(t *testing.T, s *server.MCPServer) *client.Client {
	t.Helper()
	mc := client.NewClient(mcpgo.Transport(transport.NewInProcessTransport(s)))
	if err := mc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "v1"}
	if _, err := mc.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return mc
}

func deleteReq() mcp.CallToolRequest {
	r := mcp.CallToolRequest{}
	r.Params.Name = "delete_order"
	r.Params.Arguments = map[string]any{"id": "o-1"}
	return r
}

// The policy's verdict holds as with package client: no one to ask is
// REJECTED (nothing ran; a later answer runs it), the policy's deny is
// DENIED, an approval runs the call once and a repeat does not ask again.
func TestConfirmation(t *testing.T) {
	t.Run("no confirmer", func(t *testing.T) {
		c, runs, store := destructive(t, nil)
		_, err := c.Call(caller.WithKey(t.Context(), "del-1"), deleteReq())
		if !errors.Is(err, lclient.ErrRejected) || !errors.Is(err, confirm.ErrNoConfirmer) {
			t.Fatalf("Call = %v; want client.ErrRejected with confirm.ErrNoConfirmer", err)
		}
		rec, err := store.Get(t.Context(), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "delete_order", Key: "del-1"})
		if err != nil || rec.State != ledger.StateRejected {
			t.Errorf("record = %v, %v; want REJECTED", rec, err)
		}
		if runs.Load() != 0 {
			t.Errorf("delete_order ran %d times without an answer; want 0", runs.Load())
		}
	})
	t.Run("policy denies", func(t *testing.T) {
		deny := &confirm.Policy{Rules: []confirm.Rule{{Tool: "delete_*", Action: confirm.Deny}}}
		c, runs, _ := destructive(t, &mcpgo.ClientOptions{Policy: deny})
		for i := range 2 {
			_, err := c.Call(caller.WithKey(t.Context(), "del-2"), deleteReq())
			var e *lclient.Error
			if !errors.Is(err, lclient.ErrDenied) || !errors.As(err, &e) || e.State != ledger.StateDenied {
				t.Fatalf("call %d = %v; want client.ErrDenied with the record DENIED", i+1, err)
			}
		}
		if runs.Load() != 0 {
			t.Errorf("delete_order ran %d times; want 0", runs.Load())
		}
	})
	t.Run("approved once", func(t *testing.T) {
		yes := &confirmer{answer: confirm.Answer{Decision: ledger.DecisionApproved, By: "tester"}}
		c, runs, _ := destructive(t, &mcpgo.ClientOptions{Confirmer: yes})
		for i := range 2 {
			o, err := c.Call(caller.WithKey(t.Context(), "del-3"), deleteReq())
			if err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
			if o.Replayed != (i == 1) {
				t.Errorf("call %d: Replayed = %v; want %v", i+1, o.Replayed, i == 1)
			}
		}
		if runs.Load() != 1 || yes.asked.Load() != 1 {
			t.Errorf("ran %d times after %d questions; want 1 and 1", runs.Load(), yes.asked.Load())
		}
	})
	t.Run("person says no", func(t *testing.T) {
		no := &confirmer{answer: confirm.Answer{Decision: ledger.DecisionDenied, By: "tester", Reason: "wrong order"}}
		c, runs, _ := destructive(t, &mcpgo.ClientOptions{Confirmer: no})
		_, err := c.Call(caller.WithKey(t.Context(), "del-4"), deleteReq())
		if !errors.Is(err, lclient.ErrDenied) {
			t.Fatalf("Call = %v; want client.ErrDenied", err)
		}
		if runs.Load() != 0 {
			t.Errorf("delete_order ran %d times; want 0", runs.Load())
		}
	})
}

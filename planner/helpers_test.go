package planner_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clock is a settable time shared by the Store and the Guard.
type clock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func newClock() *clock {
	return &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func openStore(t testing.TB, c *clock) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Now: c.Now})
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return st
}

// call describes a record to put in the ledger.
type call struct {
	tenant, session, tool, key string
	args                       string // JSON; its fingerprint is stored
	state                      ledger.State
	result                     string
	retention                  time.Duration
	policy                     ledger.ReusePolicy
	reason                     string // denial reason
}

func fingerprint(t *testing.T, doc string) string {
	t.Helper()
	fp, err := args.Fingerprint(json.RawMessage(doc))
	if err != nil {
		t.Fatalf("Fingerprint(%s) = %v", doc, err)
	}
	return fp
}

// seed claims c and moves it to c.state through legal transitions, as a
// client would.
func seed(t *testing.T, st ledger.Store, c call) *ledger.Record {
	t.Helper()
	ctx := context.Background()
	if c.args == "" {
		c.args = `{}`
	}
	if c.state == "" {
		c.state = ledger.StateSucceeded
	}
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: c.tenant, Tool: c.tool, Key: c.key}
	red, err := redact.JSON(json.RawMessage(c.args))
	if err != nil {
		t.Fatal(err)
	}
	approval := c.state == ledger.StatePendingApproval || c.state == ledger.StateDenied
	cl, err := st.Claim(ctx, ledger.ClaimRequest{
		ID: id, Session: c.session, Fingerprint: fingerprint(t, c.args), Arguments: red,
		Owner: "agent", NeedsApproval: approval, Retention: c.retention, ReusePolicy: c.policy,
	})
	if err != nil || !cl.Won {
		t.Fatalf("Claim(%+v) = %+v, %v; want a win", id, cl, err)
	}
	step := func(tr ledger.Transition) {
		t.Helper()
		tr.ID = id
		tr.Owner, tr.Fence = "agent", cl.Record.Fence
		if _, err := st.Transition(ctx, tr); err != nil {
			t.Fatalf("Transition(%s -> %s) = %v", tr.From, tr.To, err)
		}
	}
	switch c.state {
	case ledger.StateProcessing, ledger.StatePendingApproval:
	case ledger.StateDenied:
		step(ledger.Transition{From: ledger.StatePendingApproval, To: ledger.StateDenied,
			Approval: &ledger.Approval{Decision: ledger.DecisionDenied, By: "ann", Reason: c.reason}})
	case ledger.StateSucceeded, ledger.StateFailed:
		res := c.result
		if res == "" {
			res = `{"content":[{"type":"text","text":"done"}]}`
		}
		step(ledger.Transition{From: ledger.StateProcessing, To: c.state, Result: json.RawMessage(res), AddAttempts: 1})
	default:
		step(ledger.Transition{From: ledger.StateProcessing, To: c.state, AddAttempts: 1, ErrorKind: "test", ErrorMessage: "as seeded"})
	}
	r, err := st.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get(%+v) = %v", id, err)
	}
	return r
}

// connect mounts s over in-memory transports and returns the client side.
func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatalf("server Connect = %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatalf("client Connect = %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a ledger tool and returns its text and structured content
// decoded into out (when out is not nil).
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v) = %v", name, args, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("CallTool(%s, %v) has no content", name, args)
	}
	txt, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("CallTool(%s, %v) content[0] = %T; want text", name, args, res.Content[0])
	}
	if out != nil && !res.IsError {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("CallTool(%s) structuredContent %s: %v", name, raw, err)
		}
	}
	return txt.Text, res.IsError
}

package elicit

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// proxyServer is a server whose create_payment tool asks the host through
// Elicit, the way agentctl proxy does, and reports each answer.
type proxyServer struct {
	rounds  atomic.Int32 // handler invocations
	answers chan confirm.Answer
}

func (p *proxyServer) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p.rounds.Add(1)
	a, err := For(req).Confirm(ctx, confirm.Request{
		Tenant: "acme", Server: "payments", Tool: "create_payment", Key: "order-42",
		Arguments: []byte(`{"amount":1250}`),
	})
	var ire *InputRequiredError
	switch {
	case errors.As(err, &ire):
		return &mcp.CallToolResult{InputRequests: ire.Requests}, nil
	case errors.Is(err, confirm.ErrNoConfirmer):
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no confirmer"}}}, nil
	case err != nil:
		return nil, err
	}
	p.answers <- a
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Decision}}}, nil
}

// connect starts the proxy-like server and a host client over in-memory
// transports; version "" lets them negotiate the newest protocol.
func connect(t *testing.T, version string, opts *mcp.ClientOptions) (*proxyServer, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	p := &proxyServer{answers: make(chan confirm.Answer, 4)}
	server := mcp.NewServer(&mcp.Implementation{Name: "proxy", Version: "0"}, nil)
	server.AddTool(&mcp.Tool{Name: "create_payment", InputSchema: map[string]any{"type": "object"}}, p.handle)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return p, cs
}

func TestElicit(t *testing.T) {
	versions := []struct {
		name, version, negotiated string
		rounds                    int32
	}{
		{"multi round trip", "", "2026-07-28", 2},
		{"server request", "2025-11-25", "2025-11-25", 1},
	}
	cases := []struct {
		name   string
		result *mcp.ElicitResult
		want   confirm.Answer
	}{
		{"approve once", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve_once"}},
			confirm.Answer{Decision: ledger.DecisionApproved, By: "elicitation:host"}},
		{"approve for the session", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve_session"}},
			confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "elicitation:host"}},
		{"deny with a reason", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "too much"}},
			confirm.Answer{Decision: ledger.DecisionDenied, By: "elicitation:host", Reason: "too much"}},
		{"accept without a choice takes the default deny", &mcp.ElicitResult{Action: "accept", Content: map[string]any{}},
			confirm.Answer{Decision: ledger.DecisionDenied, By: "elicitation:host", Reason: "denied in the host"}},
		{"decline", &mcp.ElicitResult{Action: "decline"},
			confirm.Answer{Decision: ledger.DecisionDenied, By: "elicitation:host", Reason: "declined in the host"}},
		{"cancel", &mcp.ElicitResult{Action: "cancel"},
			confirm.Answer{Decision: ledger.DecisionDenied, By: "elicitation:host", Reason: "dismissed in the host without a choice"}},
	}
	for _, v := range versions {
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				var asked atomic.Int32
				var message string
				p, cs := connect(t, v.version, &mcp.ClientOptions{
					ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked.Add(1)
						message = req.Params.Message
						return tc.result, nil
					},
				})
				if got := cs.InitializeResult().ProtocolVersion; got != v.negotiated {
					t.Fatalf("negotiated protocol %q; want %q", got, v.negotiated)
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_payment", Arguments: map[string]any{}})
				if err != nil {
					t.Fatalf("CallTool = %v", err)
				}
				if text := res.Content[0].(*mcp.TextContent).Text; text != tc.want.Decision {
					t.Errorf("CallTool result %q; want %q", text, tc.want.Decision)
				}
				if got := <-p.answers; got != tc.want {
					t.Errorf("Confirm = %+v; want %+v", got, tc.want)
				}
				if asked.Load() != 1 || p.rounds.Load() != v.rounds {
					t.Errorf("host asked %d times over %d rounds; want once over %d", asked.Load(), p.rounds.Load(), v.rounds)
				}
				if !strings.Contains(message, "create_payment") || !strings.Contains(message, "order-42") {
					t.Errorf("elicitation message = %q; want the tool and key", message)
				}
			})
		}
	}
}

func TestElicitHostWithoutElicitation(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			p, cs := connect(t, version, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_payment", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("CallTool = %v", err)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; text != "no confirmer" {
				t.Errorf("CallTool result %q; want the handler to see ErrNoConfirmer", text)
			}
			if len(p.answers) != 0 {
				t.Errorf("an answer was recorded without a host that can answer")
			}
		})
	}
}

// TestElicitForgedAnswer: an answer under an id the server never issued is
// ignored, and the question is asked; the real id then works.
func TestElicitForgedAnswer(t *testing.T) {
	p, cs := connect(t, "", &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not used: the test answers by hand")
		},
	})
	approve := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve_once"}}
	forged := "io.github.mcpledger/confirm-000000000000000000000000"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "create_payment", Arguments: map[string]any{},
		InputResponses: mcp.InputResponseMap{forged: approve},
	})
	if err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 {
		t.Fatalf("CallTool with a forged answer = %+v; want one input request", res)
	}
	if len(p.answers) != 0 {
		t.Fatalf("the forged answer was taken")
	}
	var id string
	for k, r := range res.InputRequests {
		id = k
		if _, ok := r.(*mcp.ElicitParams); !ok {
			t.Fatalf("input request %q is %T; want *mcp.ElicitParams", k, r)
		}
	}
	if id == forged {
		t.Fatalf("input id %q equals the forged one", id)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "create_payment", Arguments: map[string]any{},
		InputResponses: mcp.InputResponseMap{id: approve},
	})
	if err != nil || res.NeedsInput() {
		t.Fatalf("CallTool with the issued id = %+v, %v; want a final result", res, err)
	}
	if got := <-p.answers; got.Decision != ledger.DecisionApproved {
		t.Errorf("Confirm with the issued id = %+v; want approved", got)
	}
}

func TestAnswerOfResult(t *testing.T) {
	tests := []struct {
		name string
		res  *mcp.ElicitResult
		want string // decision
	}{
		{"nil", nil, ledger.DecisionDenied},
		{"unknown action", &mcp.ElicitResult{Action: "maybe"}, ledger.DecisionDenied},
		{"unknown decision", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "yolo"}}, ledger.DecisionDenied},
		{"decision of the wrong type", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": true}}, ledger.DecisionDenied},
		{"decline even with an approving content", &mcp.ElicitResult{Action: "decline", Content: map[string]any{"decision": "approve_once"}}, ledger.DecisionDenied},
		{"approve", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve_once"}}, ledger.DecisionApproved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Answer(tc.res, "elicitation"); got.Decision != tc.want || got.By != "elicitation" {
				t.Errorf("Answer(%+v) = %+v; want decision %q by elicitation", tc.res, got, tc.want)
			}
		})
	}
}

// A nil Confirmer (a request without a session) passes the question on.
func TestNilConfirmerPassesOn(t *testing.T) {
	var c *Confirmer
	_, err := confirm.Chain(c).Confirm(context.Background(), confirm.Request{Tool: "x"})
	if !errors.Is(err, confirm.ErrNoConfirmer) {
		t.Errorf("Chain(nil *Confirmer).Confirm error = %v; want ErrNoConfirmer", err)
	}
	if For(nil) != nil {
		t.Errorf("For(nil) = non-nil; want nil")
	}
}

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/server"
)

// errorServer connects a client to an in-memory server whose tool "fail"
// returns the error the test hands it.
func errorServer(t *testing.T, fail func() error) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "errors", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, fail()
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server Connect = %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client Connect = %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestServerErrorOverTheWire(t *testing.T) {
	tests := []struct {
		name       string
		err        *jsonrpc.Error
		wantReason string
		wantAfter  time.Duration
		wantClass  retry.Class
	}{
		{"key reused", server.Error(ledger.CodeKeyReused, ledger.ReasonKeyReused, "key bound to other arguments", 0), ledger.ReasonKeyReused, 0, retry.Permanent},
		{"in progress with retryAfter", server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "in progress", 250*time.Millisecond), ledger.ReasonInProgress, 250 * time.Millisecond, retry.Transient},
		{"in progress rounds up to ms", server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "in progress", 1500*time.Microsecond), ledger.ReasonInProgress, 2 * time.Millisecond, retry.Transient},
		{"in progress without retryAfter", server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "in progress", 0), ledger.ReasonInProgress, 0, retry.Transient},
		{"outcome unknown", server.Error(ledger.CodeOutcomeUnknown, ledger.ReasonOutcomeUnknown, "lease expired", 0), ledger.ReasonOutcomeUnknown, 0, retry.Unknown},
		{"key required", server.Error(ledger.CodeKeyRequired, ledger.ReasonKeyRequired, "no key", 0), ledger.ReasonKeyRequired, 0, retry.Permanent},
		{"key invalid", server.Error(ledger.CodeKeyRequired, ledger.ReasonKeyInvalid, "bad key", 0), ledger.ReasonKeyInvalid, 0, retry.Permanent},
		{"invalid params", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}, "", 0, retry.Permanent},
		{"invalid request", &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "bad"}, "", 0, retry.Permanent},
		{"method not found", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "bad"}, "", 0, retry.Permanent},
		{"internal error may have run", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "boom"}, "", 0, retry.Ambiguous},
		{"application code may have run", &jsonrpc.Error{Code: 42, Message: "boom"}, "", 0, retry.Ambiguous},
		{"foreign data is no reason", &jsonrpc.Error{Code: ledger.CodeInProgress, Message: "x", Data: []byte(`"text"`)}, "", 0, retry.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := errorServer(t, func() error { return tt.err })
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail"})
			if err == nil {
				t.Fatalf("CallTool = %+v, nil; want an error", res)
			}
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != tt.err.Code {
				t.Fatalf("CallTool error = %v; want code %d", err, tt.err.Code)
			}
			if got := retry.Reason(client.Neutral(err)); got != tt.wantReason {
				t.Errorf("Reason(%v) = %q; want %q", err, got, tt.wantReason)
			}
			got, ok := retry.RetryAfter(client.Neutral(err))
			if got != tt.wantAfter || ok != (tt.wantAfter > 0) {
				t.Errorf("RetryAfter(%v) = %v, %v; want %v", err, got, ok, tt.wantAfter)
			}
			if got := retry.Classify(client.Neutral(err)); got != tt.wantClass {
				t.Errorf("Classify(%v) = %v; want %v", err, got, tt.wantClass)
			}
		})
	}
}

func TestReasonAndRetryAfterOnPlainErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("x"), fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: 1})} {
		if r := retry.Reason(client.Neutral(err)); r != "" {
			t.Errorf("Reason(%v) = %q; want empty", err, r)
		}
		if d, ok := retry.RetryAfter(client.Neutral(err)); ok {
			t.Errorf("RetryAfter(%v) = %v, true; want false", err, d)
		}
	}
	// RetryAfter reads only the in_progress code, whatever else says retryAfterMs.
	other := server.Error(ledger.CodeOutcomeUnknown, ledger.ReasonOutcomeUnknown, "x", time.Second)
	if d, ok := retry.RetryAfter(client.Neutral(other)); ok {
		t.Errorf("RetryAfter(%v) = %v, true; want false for code %d", other, d, other.Code)
	}
	wrapped := fmt.Errorf("calling: %w", errors.Join(errors.New("a"), server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "x", time.Second)))
	if d, ok := retry.RetryAfter(client.Neutral(wrapped)); !ok || d != time.Second {
		t.Errorf("RetryAfter(%v) = %v, %v; want 1s, true", wrapped, d, ok)
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[retry.Class]string{
		retry.Permanent: "permanent", retry.Transient: "transient",
		retry.Ambiguous: "ambiguous", retry.Unknown: "unknown", retry.Class(9): "class(9)",
	} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String() = %q; want %q", int(c), got, want)
		}
	}
}

func TestServerTextIsNotAnHTTPStatus(t *testing.T) {
	// A server's own error whose message happens to end like a status text
	// stays the server's answer: the handler may have run.
	cs := errorServer(t, func() error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream said: Unauthorized"}
	})
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail"})
	if got := retry.Classify(client.Neutral(err)); got != retry.Ambiguous {
		t.Errorf("Classify(%v) = %v; want ambiguous", err, got)
	}
	if retry.SessionLost(client.Neutral(err)) {
		t.Errorf("SessionLost(%v) = true; want false", err)
	}
}

package mcptest_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/retry"
)

func TestFailTransient(t *testing.T) {
	ctx := context.Background()
	s := mcptest.New(nil)
	cs := s.ConnectInMemory(ctx, t, nil)
	s.Script(mcptest.FailTransient(2).WithRetryAfter(40 * time.Millisecond))
	if got := len(s.Pending()); got != 2 {
		t.Fatalf("Pending() has %d faults; want 2", got)
	}
	for i := range 2 {
		_, err := write(ctx, cs, "k", "a", 1)
		if !errors.Is(err, &jsonrpc.Error{Code: ledger.CodeInProgress}) || retry.Reason(client.Neutral(err)) != ledger.ReasonInProgress {
			t.Fatalf("call %d: CallTool = %v; want -31002 in_progress", i+1, err)
		}
		if d, ok := retry.RetryAfter(client.Neutral(err)); !ok || d != 40*time.Millisecond {
			t.Errorf("call %d: RetryAfter = %v, %v; want 40ms", i+1, d, ok)
		}
		if n := s.Executions("k"); n != 0 {
			t.Errorf("call %d: Executions(k) = %d; want 0 (failed before executing)", i+1, n)
		}
	}
	if _, err := write(ctx, cs, "k", "a", 1); err != nil {
		t.Fatalf("third call: %v", err)
	}
	if n := s.Executions("k"); n != 1 {
		t.Errorf("Executions(k) = %d; want 1", n)
	}
	if got := s.KeysSeen(); !slices.Equal(got, []string{"k", "k", "k"}) {
		t.Errorf("KeysSeen() = %q; want the same key on all three attempts", got)
	}
	if p := s.Pending(); len(p) != 0 {
		t.Errorf("Pending() = %v; want none left", p)
	}
}

func TestDropAfterExecuteInMemory(t *testing.T) {
	for _, f := range []mcptest.Fault{mcptest.DropAfterExecute(), mcptest.ExitAfterCommit()} {
		t.Run(string(f.Kind), func(t *testing.T) {
			ctx := context.Background()
			s := mcptest.New(nil)
			cs := s.ConnectInMemory(ctx, t, nil)
			s.Script(f)
			_, err := write(ctx, cs, "k", "a", 1)
			if !errors.Is(err, io.EOF) {
				t.Errorf("CallTool = %v; want an error wrapping io.EOF", err)
			}
			if n := s.Executions("k"); n != 1 {
				t.Errorf("Executions(k) = %d; want 1 (executed before the drop)", n)
			}
			_, err = write(ctx, cs, "k", "a", 1)
			if !errors.Is(err, mcp.ErrConnectionClosed) {
				t.Errorf("next call on the dead session = %v; want mcp.ErrConnectionClosed", err)
			}
			// A new session on the same server works and sees the counts.
			cs2 := s.ConnectInMemory(ctx, t, nil)
			if _, err := write(ctx, cs2, "k", "a", 1); err != nil {
				t.Fatalf("call after reconnect: %v", err)
			}
			if n := s.Executions("k"); n != 2 {
				t.Errorf("Executions(k) = %d; want 2", n)
			}
		})
	}
}

func TestStallAfterExecute(t *testing.T) {
	t.Run("until the client gives up", func(t *testing.T) {
		s := mcptest.New(nil)
		cs := s.ConnectInMemory(context.Background(), t, nil)
		s.Script(mcptest.StallAfterExecute(0))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := write(ctx, cs, "k", "a", 1)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("CallTool = %v; want context.DeadlineExceeded", err)
		}
		select {
		case key := <-s.Stalled():
			if key != "k" {
				t.Errorf("Stalled() = %q; want k", key)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the call never reached the stall")
		}
		if n := s.Executions("k"); n != 1 {
			t.Errorf("Executions(k) = %d; want 1", n)
		}
		// The session survives a deadline.
		if _, err := write(context.Background(), cs, "k2", "a", 1); err != nil {
			t.Errorf("next call: %v", err)
		}
	})
	t.Run("bounded stall answers late", func(t *testing.T) {
		ctx := context.Background()
		s := mcptest.New(nil)
		cs := s.ConnectInMemory(ctx, t, nil)
		s.Script(mcptest.StallAfterExecute(20 * time.Millisecond))
		res, err := write(ctx, cs, "k", "a", 1)
		if err != nil || res.IsError {
			t.Fatalf("CallTool = %v, %v; want a result after the stall", text(res), err)
		}
		if got := <-s.Stalled(); got != "k" {
			t.Errorf("Stalled() = %q; want k", got)
		}
	})
}

func TestToolErrorAndProtocolError(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		fault      mcptest.Fault
		wantCode   int64 // 0: a result
		wantReason string
		wantIsErr  bool
		wantExecs  int
	}{
		{"tool error counts as executed", mcptest.ToolError(), 0, "", true, 1},
		{"invalid params", mcptest.ProtocolError(jsonrpc.CodeInvalidParams), jsonrpc.CodeInvalidParams, "", false, 0},
		{"outcome unknown", mcptest.ProtocolError(ledger.CodeOutcomeUnknown), ledger.CodeOutcomeUnknown, ledger.ReasonOutcomeUnknown, false, 0},
		{"key required", mcptest.ProtocolError(ledger.CodeKeyRequired), ledger.CodeKeyRequired, ledger.ReasonKeyRequired, false, 0},
		{"http fault off HTTP", mcptest.HTTPStatus(503), jsonrpc.CodeInternalError, "", false, 0},
		{"http after-execute fault off HTTP", mcptest.HTTPStatusAfterExecute(503), jsonrpc.CodeInternalError, "", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mcptest.New(nil)
			cs := s.ConnectInMemory(ctx, t, nil)
			s.Script(tt.fault)
			res, err := write(ctx, cs, "k", "a", 1)
			if tt.wantCode == 0 {
				if err != nil || res.IsError != tt.wantIsErr {
					t.Errorf("CallTool = %+v, %v; want isError=%v", res, err, tt.wantIsErr)
				}
			} else if !errors.Is(err, &jsonrpc.Error{Code: tt.wantCode}) {
				t.Errorf("CallTool = %v; want code %d", err, tt.wantCode)
			}
			if got := retry.Reason(client.Neutral(err)); got != tt.wantReason {
				t.Errorf("Reason = %q; want %q", got, tt.wantReason)
			}
			if n := s.Executions("k"); n != tt.wantExecs {
				t.Errorf("Executions(k) = %d; want %d", n, tt.wantExecs)
			}
		})
	}
}

func TestControlTool(t *testing.T) {
	ctx := context.Background()
	s := mcptest.New(nil)
	cs := s.ConnectInMemory(ctx, t, nil)
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.ControlTool, Arguments: map[string]any{
		"faults": []mcptest.Fault{mcptest.ToolError(), mcptest.FailTransient(2)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []mcptest.FaultKind{mcptest.KindToolError, mcptest.KindFailTransient, mcptest.KindFailTransient}
	var got []mcptest.FaultKind
	for _, f := range s.Pending() {
		got = append(got, f.Kind)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Pending() kinds = %v; want %v", got, want)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read"}); err != nil {
		t.Fatal(err)
	}
	if len(s.Pending()) != 3 {
		t.Errorf("a read call used a fault: Pending() = %v", s.Pending())
	}
}

package mcptest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/mcptest"
)

func connectHTTP(t *testing.T, url string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestHTTPFaults(t *testing.T) {
	tests := []struct {
		name      string
		fault     mcptest.Fault
		wantText  string // in the error message
		wantExecs int
	}{
		{"status before execute", mcptest.HTTPStatus(http.StatusServiceUnavailable), "Service Unavailable", 0},
		{"429 after execute", mcptest.HTTPStatusAfterExecute(http.StatusTooManyRequests), "Too Many Requests", 1},
		{"503 after execute", mcptest.HTTPStatusAfterExecute(http.StatusServiceUnavailable), "Service Unavailable", 1},
		{"drop after execute", mcptest.DropAfterExecute(), "EOF", 1},
		{"exit after commit in process drops", mcptest.ExitAfterCommit(), "EOF", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s := mcptest.New(nil)
			cs, err := connectHTTP(t, mcptest.ServeHTTP(t, s))
			if err != nil {
				t.Fatal(err)
			}
			s.Script(tt.fault)
			_, err = write(ctx, cs, "k", "a", 1)
			if !errors.Is(err, &jsonrpc.Error{Code: -32005}) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("CallTool = %v; want -32005 mentioning %q", err, tt.wantText)
			}
			if n := s.Executions("k"); n != tt.wantExecs {
				t.Errorf("Executions(k) = %d; want %d", n, tt.wantExecs)
			}
			// The HTTP session survives: the next call goes through.
			if _, err := write(ctx, cs, "k", "a", 1); err != nil {
				t.Errorf("next call: %v", err)
			}
			if n := s.Executions("k"); n != tt.wantExecs+1 {
				t.Errorf("Executions(k) = %d; want %d", n, tt.wantExecs+1)
			}
		})
	}
}

func TestHTTPPlainAndStall(t *testing.T) {
	s := mcptest.New(&mcptest.Options{Idempotent: true})
	cs, err := connectHTTP(t, mcptest.ServeHTTP(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cs.InitializeResult().Capabilities.Experimental[mcptest.CapabilityKey]; !ok {
		t.Errorf("capability not advertised over HTTP")
	}
	s.Script(mcptest.StallAfterExecute(0))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := write(ctx, cs, "k", "a", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stalled call = %v; want context.DeadlineExceeded", err)
	}
	if err := s.WaitExecutions(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	// Idempotent: the retry is answered from the first execution.
	res, err := write(context.Background(), cs, "k", "a", 1)
	if err != nil || !strings.Contains(text(res), "execution 1 ") {
		t.Errorf("retry = %q, %v; want the first execution's result", text(res), err)
	}
	if n := s.Executions("k"); n != 1 {
		t.Errorf("Executions(k) = %d; want 1", n)
	}
}

func TestRefusedURL(t *testing.T) {
	if _, err := connectHTTP(t, mcptest.RefusedURL(t)); err == nil {
		t.Fatal("Connect to RefusedURL succeeded; want connection refused")
	}
}

package retry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/retry"
)

// Every case below produces its error through a real go-sdk session against
// mcptest, then checks how Classify sorts it and what the server executed.

func writeParams(key string) *mcp.CallToolParams {
	return &mcp.CallToolParams{
		Name:      "write",
		Meta:      mcp.Meta{mcptest.MetaKey: key},
		Arguments: map[string]any{"id": "inv-1", "amount": 10},
	}
}

// check asserts Classify(err), SessionLost(err) and the executions behind it.
func check(t *testing.T, s *mcptest.Server, err error, want retry.Class, lost bool, execs int) {
	t.Helper()
	if err == nil {
		t.Fatalf("CallTool succeeded; want a failure classified %v", want)
	}
	if got := retry.Classify(client.Neutral(err)); got != want {
		t.Errorf("Classify(%v) = %v; want %v", err, got, want)
	}
	if got := retry.SessionLost(client.Neutral(err)); got != lost {
		t.Errorf("SessionLost(%v) = %v; want %v", err, got, lost)
	}
	if got := s.Executions("k"); got != execs {
		t.Errorf("Executions(k) = %d; want %d", got, execs)
	}
}

func TestClassifyInMemory(t *testing.T) {
	tests := []struct {
		name  string
		fault *mcptest.Fault
		call  func(ctx context.Context, cs *mcp.ClientSession) error
		want  retry.Class
		lost  bool
		execs int
	}{
		{name: "in progress", fault: ptr(mcptest.FailTransient(1)), want: retry.Transient},
		{name: "key reused", fault: ptr(mcptest.ProtocolError(ledger.CodeKeyReused)), want: retry.Permanent},
		{name: "outcome unknown", fault: ptr(mcptest.ProtocolError(ledger.CodeOutcomeUnknown)), want: retry.Unknown},
		{name: "key required", fault: ptr(mcptest.ProtocolError(ledger.CodeKeyRequired)), want: retry.Permanent},
		{name: "invalid request", fault: ptr(mcptest.ProtocolError(jsonrpc.CodeInvalidRequest)), want: retry.Permanent},
		{name: "method not found", fault: ptr(mcptest.ProtocolError(jsonrpc.CodeMethodNotFound)), want: retry.Permanent},
		{name: "internal error may have run", fault: ptr(mcptest.ProtocolError(jsonrpc.CodeInternalError)), want: retry.Ambiguous},
		{
			name: "unknown tool",
			call: func(ctx context.Context, cs *mcp.ClientSession) error {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"})
				return err
			},
			want: retry.Permanent,
		},
		{
			name: "invalid arguments",
			call: func(ctx context.Context, cs *mcp.ClientSession) error {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": 1}})
				return err
			},
			want: retry.Permanent,
		},
		{
			name: "arguments that cannot be encoded",
			call: func(ctx context.Context, cs *mcp.ClientSession) error {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"c": make(chan int)}})
				return err
			},
			want: retry.Permanent,
		},
		{name: "response dropped after execute (EOF)", fault: ptr(mcptest.DropAfterExecute()), want: retry.Ambiguous, lost: true, execs: 1},
		{
			name: "call on a session already dead",
			call: func(ctx context.Context, cs *mcp.ClientSession) error {
				cs.Close()
				_, err := cs.CallTool(ctx, writeParams("k"))
				return err
			},
			want: retry.Transient, lost: true,
		},
		{
			name:  "deadline while the server stalls after executing",
			fault: ptr(mcptest.StallAfterExecute(0)),
			call: func(ctx context.Context, cs *mcp.ClientSession) error {
				ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				_, err := cs.CallTool(ctx, writeParams("k"))
				if !errors.Is(err, context.DeadlineExceeded) {
					return errors.Join(errors.New("want DeadlineExceeded"), err)
				}
				return err
			},
			want: retry.Ambiguous, execs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := mcptest.New(nil)
			cs := s.ConnectInMemory(ctx, t, nil)
			if tt.fault != nil {
				s.Script(*tt.fault)
			}
			call := tt.call
			if call == nil {
				call = func(ctx context.Context, cs *mcp.ClientSession) error {
					_, err := cs.CallTool(ctx, writeParams("k"))
					return err
				}
			}
			err := call(ctx, cs)
			if tt.execs > 0 {
				// A stalled call executed before the client gave up; wait
				// for the count rather than racing the server.
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if werr := s.WaitExecutions(wctx, tt.execs); werr != nil {
					t.Fatalf("WaitExecutions = %v", werr)
				}
			}
			check(t, s, err, tt.want, tt.lost, tt.execs)
		})
	}
}

func TestClassifyCancelMidCall(t *testing.T) {
	s := mcptest.New(nil)
	cs := s.ConnectInMemory(context.Background(), t, nil)
	s.Script(mcptest.StallAfterExecute(0))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.Stalled()
		cancel()
	}()
	_, err := cs.CallTool(ctx, writeParams("k"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool = %v; want context.Canceled", err)
	}
	check(t, s, err, retry.Ambiguous, false, 1)
}

func TestClassifyStdioChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := &mcptest.Options{}
	cmd := mcptest.Command(t, opts)
	s := mcptest.New(opts)
	defer s.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	s.Script(mcptest.ExitAfterCommit())
	_, err = cs.CallTool(ctx, writeParams("k"))
	t.Run("server exits mid-call", func(t *testing.T) {
		check(t, s, err, retry.Ambiguous, true, 1)
	})
	_, err = cs.CallTool(ctx, writeParams("k"))
	t.Run("next call on the dead session", func(t *testing.T) {
		if !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Errorf("CallTool = %v; want mcp.ErrConnectionClosed", err)
		}
		check(t, s, err, retry.Transient, true, 1)
	})
}

func TestClassifyStdioKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := &mcptest.Options{}
	cmd := mcptest.Command(t, opts)
	s := mcptest.New(opts)
	defer s.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	s.Script(mcptest.StallAfterExecute(0))
	go func() {
		// The child stalls after committing; kill it once the commit is on
		// disk (the file is the only way to see into the other process).
		if s.WaitExecutions(ctx, 1) == nil {
			cmd.Process.Kill()
		}
	}()
	_, err = cs.CallTool(ctx, writeParams("k"))
	check(t, s, err, retry.Ambiguous, true, 1)
}

// httpSession connects over streamable HTTP. The standalone SSE stream is
// off so that a server going away fails the next call, not the session in
// the background.
func httpSession(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("Connect(%s) = %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestClassifyHTTPFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault mcptest.Fault
		want  retry.Class
		lost  bool
		execs int
	}{
		{"429 before execute", mcptest.HTTPStatus(http.StatusTooManyRequests), retry.Ambiguous, false, 0},
		{"503 before execute", mcptest.HTTPStatus(http.StatusServiceUnavailable), retry.Ambiguous, false, 0},
		{"429 after execute", mcptest.HTTPStatusAfterExecute(http.StatusTooManyRequests), retry.Ambiguous, false, 1},
		{"500 after execute", mcptest.HTTPStatusAfterExecute(http.StatusInternalServerError), retry.Ambiguous, false, 1},
		{"502 after execute", mcptest.HTTPStatusAfterExecute(http.StatusBadGateway), retry.Ambiguous, false, 1},
		{"503 after execute", mcptest.HTTPStatusAfterExecute(http.StatusServiceUnavailable), retry.Ambiguous, false, 1},
		{"504 after execute", mcptest.HTTPStatusAfterExecute(http.StatusGatewayTimeout), retry.Ambiguous, false, 1},
		{"connection dropped after execute", mcptest.DropAfterExecute(), retry.Ambiguous, false, 1},
		{"401 fails the session", mcptest.HTTPStatus(http.StatusUnauthorized), retry.Permanent, true, 0},
		{"403 fails the session", mcptest.HTTPStatus(http.StatusForbidden), retry.Permanent, true, 0},
		{"in progress over HTTP", mcptest.FailTransient(1), retry.Transient, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mcptest.New(nil)
			cs := httpSession(t, mcptest.ServeHTTP(t, s))
			s.Script(tt.fault)
			_, err := cs.CallTool(context.Background(), writeParams("k"))
			check(t, s, err, tt.want, tt.lost, tt.execs)

			// What SessionLost promised: the next call works or is refused
			// as on a closed connection.
			_, next := cs.CallTool(context.Background(), writeParams("k2"))
			if tt.lost != errors.Is(next, mcp.ErrConnectionClosed) {
				t.Errorf("next call = %v; want session lost = %v", next, tt.lost)
			}
		})
	}
}

func TestClassifyHTTPStall(t *testing.T) {
	s := mcptest.New(nil)
	cs := httpSession(t, mcptest.ServeHTTP(t, s))
	s.Script(mcptest.StallAfterExecute(0))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := cs.CallTool(ctx, writeParams("k"))
	if werr := s.WaitExecutions(context.Background(), 1); werr != nil {
		t.Fatal(werr)
	}
	check(t, s, err, retry.Ambiguous, false, 1)
}

func TestClassifyHTTPConnectionRefused(t *testing.T) {
	s := mcptest.New(nil)
	ts := httptest.NewServer(s.Handler())
	cs := httpSession(t, ts.URL)
	if _, err := cs.CallTool(context.Background(), writeParams("k")); err != nil {
		t.Fatalf("first call: %v", err)
	}
	ts.CloseClientConnections()
	ts.Close() // the port now refuses connections
	_, err := cs.CallTool(context.Background(), writeParams("k"))
	if !errors.Is(err, &jsonrpc.Error{Code: -32005}) {
		t.Errorf("CallTool = %v; want go-sdk's -32005 rejected by transport", err)
	}
	check(t, s, err, retry.Transient, false, 1)
}

func TestClassifyHTTPSessionMissing(t *testing.T) {
	// The server forgets the session, as after a restart: the next POST with
	// the old session id gets 404.
	s := mcptest.New(nil)
	var h atomic.Pointer[http.Handler]
	first := s.Handler()
	h.Store(&first)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cs := httpSession(t, ts.URL)
	fresh := s.Handler()
	h.Store(&fresh)
	_, err := cs.CallTool(context.Background(), writeParams("k"))
	if !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("CallTool = %v; want mcp.ErrSessionMissing", err)
	}
	check(t, s, err, retry.Transient, true, 0)
}

func TestClassifyHTTPErrorBody(t *testing.T) {
	// A front end that answers 409 with our JSON-RPC error in the body:
	// go-sdk wraps that error next to -32005, and the server's code decides.
	body := `{"jsonrpc":"2.0","id":1,"error":{"code":-31001,"message":"key reused","data":{"reason":"key_reused"}}}`
	s := mcptest.New(nil)
	inner := s.Handler()
	var reject atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reject.Load() && r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(body))
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cs := httpSession(t, ts.URL)
	reject.Store(true)
	_, err := cs.CallTool(context.Background(), writeParams("k"))
	if !errors.Is(err, &jsonrpc.Error{Code: -32005}) || !strings.Contains(err.Error(), "key reused") {
		t.Errorf("CallTool = %v; want -32005 carrying the body's error", err)
	}
	if r := retry.Reason(client.Neutral(err)); r != ledger.ReasonKeyReused {
		t.Errorf("Reason(%v) = %q; want %q", err, r, ledger.ReasonKeyReused)
	}
	check(t, s, err, retry.Permanent, false, 0)
}

func TestClassifyPlainErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want retry.Class
	}{
		{"nil", nil, retry.Permanent},
		{"stop mark", retry.Stop(context.DeadlineExceeded), retry.Permanent},
		{"ledger key reused", ledger.ErrKeyReused, retry.Permanent},
		{"ledger invalid key", ledger.ErrInvalidKey, retry.Permanent},
		{"ledger in progress", ledger.ErrInProgress, retry.Transient},
		{"unrecognised", errors.New("something odd"), retry.Ambiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retry.Classify(client.Neutral(tt.err)); got != tt.want {
				t.Errorf("Classify(%v) = %v; want %v", tt.err, got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestClassifyBrokenPipe(t *testing.T) {
	// A stdio server that stopped reading (it died; its stdout is still
	// open, so the client has not seen EOF): the next request's write fails
	// with EPIPE before the message is complete.
	ctx := context.Background()
	c2sR, c2sW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s2cR, s2cW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c2sW.Close(); s2cR.Close(); s2cW.Close() })
	s := mcptest.New(nil)
	ss, err := s.MCP().Connect(ctx, &mcp.IOTransport{Reader: c2sR, Writer: keepOpen{s2cW}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if _, err := cs.CallTool(ctx, writeParams("k")); err != nil {
		t.Fatalf("first call: %v", err)
	}

	c2sR.Close() // the server's stdin: no reader is left
	if err := ss.Wait(); err != nil {
		t.Logf("server session ended: %v", err)
	}
	_, err = cs.CallTool(ctx, writeParams("k"))
	if !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("CallTool = %v; want EPIPE", err)
	}
	check(t, s, err, retry.Transient, true, 1)
}

// keepOpen hides Close, so the server's end of its stdout stays open.
type keepOpen struct{ io.Writer }

func (keepOpen) Close() error { return nil }

package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipe connects a new server session to one end of an in-memory pipe and
// returns the other end, and a cut that closes the pipe from the server's
// side (what DropAfterExecute does).
func (s *Server) pipe(ctx context.Context) (mcp.Transport, func(), error) {
	serverEnd, clientEnd := net.Pipe()
	ss, err := s.srv.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcptest: server connect: %w", err)
	}
	cut := func() { _ = serverEnd.Close() } // cutting it is the fault
	// Registered before the client end exists, so no call can miss it.
	s.mu.Lock()
	s.closers[ss] = cut
	s.mu.Unlock()
	go func() {
		// The session ends when either side closes the pipe; its error
		// only says which, and no one waits to hear it.
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.closers, ss)
		s.mu.Unlock()
	}()
	return &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, cut, nil
}

// ClientTransport connects a new server session to one end of an in-memory
// pipe and returns the other end for a client to Connect to. The pipe is
// cut in t.Cleanup, which also ends a call stalled until its context ends.
func (s *Server) ClientTransport(t testing.TB) mcp.Transport {
	t.Helper()
	tr, cut, err := s.pipe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cut)
	return tr
}

// Connect connects a go-sdk client (built with clientOpts, which may be nil)
// to s over a new in-memory pipe. Closing the session ends the server side
// too. Call it again to reconnect after a DropAfterExecute; it suits a
// client's reconnect function:
//
//	reconnect := func(ctx context.Context) (*mcp.ClientSession, error) { return s.Connect(ctx, nil) }
func (s *Server) Connect(ctx context.Context, clientOpts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	tr, cut, err := s.pipe(ctx)
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcptest-client", Version: "v1"}, clientOpts)
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		cut()
		return nil, fmt.Errorf("mcptest: client connect: %w", err)
	}
	return cs, nil
}

// ConnectInMemory is Connect for tests: it fails t on error and closes the
// session in t.Cleanup.
func (s *Server) ConnectInMemory(ctx context.Context, t testing.TB, clientOpts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := s.Connect(ctx, clientOpts)
	if err != nil {
		t.Fatal(err)
	}
	// A test that cut the connection leaves a session whose Close reports
	// the cut: nothing for the test to hear.
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Environment of a re-executed test binary that serves stdio.
const (
	envChild   = "MCPTEST_CHILD"
	envOptions = "MCPTEST_OPTIONS"
)

// RunIfChild serves s over stdio and exits when the test binary was started
// by Command; otherwise it returns at once. Call it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		mcptest.RunIfChild()
//		os.Exit(m.Run())
//	}
func RunIfChild() {
	if os.Getenv(envChild) != "1" {
		return
	}
	os.Exit(serveChild(os.Getenv(envOptions)))
}

func serveChild(rawOpts string) int {
	var opts Options
	if err := json.Unmarshal([]byte(rawOpts), &opts); err != nil {
		fmt.Fprintf(os.Stderr, "mcptest: child options: %v\n", err)
		return 2
	}
	s := New(&opts)
	s.child = true
	s.stdio = func() {
		// Closing both ends is what a dropped connection looks like to the
		// parent: its read returns EOF.
		_ = os.Stdout.Close()
		_ = os.Stdin.Close()
	}
	ss, err := s.srv.Connect(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout}, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcptest: serve stdio: %v\n", err)
		return 1
	}
	// The session ends when the parent closes stdin or a fault cuts it.
	if err := ss.Wait(); err != nil {
		fmt.Fprintf(os.Stderr, "mcptest: session ended: %v\n", err)
	}
	return 0
}

// Command returns a command that re-executes the running test binary as a
// stdio MCP server built from opts (the package's TestMain must call
// RunIfChild). The child keeps its state in opts.StateFile; when that is
// empty, Command sets it to a new file under t.TempDir(). Build a Server in
// the test with the same opts to script faults and read counts:
//
//	opts := &mcptest.Options{}
//	cmd := mcptest.Command(t, opts)
//	s := mcptest.New(opts)
//	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
func Command(t testing.TB, opts *Options) *exec.Cmd {
	t.Helper()
	if opts.StateFile == "" {
		opts.StateFile = filepath.Join(t.TempDir(), "mcptest-state.jsonl")
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatalf("mcptest: encode options: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("mcptest: test binary: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=1", envOptions+"="+string(raw))
	return cmd
}

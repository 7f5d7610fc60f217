package mcptest_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/mcptest"
)

// startChild runs the test binary as a stdio server and connects to it.
func startChild(t *testing.T, opts *mcptest.Options) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := mcptest.Command(t, opts)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("Connect to child = %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd
}

func TestChildExitAfterCommitAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := &mcptest.Options{Idempotent: true}
	cs, cmd := startChild(t, opts)
	s := mcptest.New(opts) // same state file: the test's view of the child
	defer s.Close()

	first, err := write(ctx, cs, "k1", "a", 1)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	s.Script(mcptest.ExitAfterCommit()) // scripted from this process, used by the child
	_, err = write(ctx, cs, "k2", "b", 2)
	if !errors.Is(err, io.EOF) {
		t.Errorf("call with ExitAfterCommit = %v; want an error wrapping io.EOF", err)
	}
	// The transport reaps the child once the connection is gone.
	if err := cs.Wait(); err != nil {
		t.Logf("session ended: %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != mcptest.ExitCode {
		t.Errorf("child exit code = %d; want %d", code, mcptest.ExitCode)
	}
	if _, err := write(ctx, cs, "k2", "b", 2); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("next call on the dead session = %v; want mcp.ErrConnectionClosed", err)
	}
	if n := s.Executions("k2"); n != 1 {
		t.Errorf("Executions(k2) = %d; want 1: committed before the exit", n)
	}

	// A restarted child on the same file remembers k1 and k2.
	cs2, _ := startChild(t, opts)
	again, err := write(ctx, cs2, "k1", "a", 1)
	if err != nil {
		t.Fatalf("replay after restart: %v", err)
	}
	if text(again) != text(first) {
		t.Errorf("replay after restart = %q; want the first result %q", text(again), text(first))
	}
	if _, err := write(ctx, cs2, "k2", "b", 2); err != nil {
		t.Fatalf("k2 after restart: %v", err)
	}
	if n1, n2, total := s.Executions("k1"), s.Executions("k2"), s.TotalExecutions(); n1 != 1 || n2 != 1 || total != 2 {
		t.Errorf("Executions k1, k2, total = %d, %d, %d; want 1, 1, 2", n1, n2, total)
	}
}

func TestChildDropAndControlTool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := &mcptest.Options{}
	cs, cmd := startChild(t, opts)
	s := mcptest.New(opts)
	defer s.Close()

	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.ControlTool, Arguments: map[string]any{
		"faults": []mcptest.Fault{mcptest.DropAfterExecute()},
	}}); err != nil {
		t.Fatal(err)
	}
	if p := s.Pending(); len(p) != 1 || p[0].Kind != mcptest.KindDropAfterExecute {
		t.Errorf("Pending() seen from the test = %v; want [drop_after_execute]", p)
	}
	_, err := write(ctx, cs, "k", "a", 1)
	if !errors.Is(err, io.EOF) {
		t.Errorf("call with DropAfterExecute = %v; want an error wrapping io.EOF", err)
	}
	if err := s.WaitExecutions(ctx, 1); err != nil {
		t.Fatalf("WaitExecutions = %v", err)
	}
	if err := cs.Wait(); err != nil {
		t.Logf("session ended: %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("child exit code after the drop = %d; want 0", code)
	}
	if n := s.Executions("k"); n != 1 {
		t.Errorf("Executions(k) = %d; want 1", n)
	}
}

func TestStateFileSharedAndTorn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.jsonl")
	a := mcptest.New(&mcptest.Options{StateFile: path})
	defer a.Close()
	ctx := context.Background()
	cs := a.ConnectInMemory(ctx, t, nil)
	if _, err := write(ctx, cs, "k", "a", 1); err != nil {
		t.Fatal(err)
	}

	// A crash mid-write leaves a line without its newline.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"exec":{"key":"torn"`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	b := mcptest.New(&mcptest.Options{StateFile: path})
	defer b.Close()
	b.Script(mcptest.ToolError())
	if n := b.Executions("k"); n != 1 {
		t.Errorf("second Server on the file: Executions(k) = %d; want 1", n)
	}
	if n := b.Executions("torn"); n != 0 {
		t.Errorf("Executions(torn) = %d; want 0 for a torn line", n)
	}
	res, err := write(ctx, cs, "k", "a", 1) // served by a, scripted by b
	if err != nil || !res.IsError {
		t.Errorf("call after b.Script(ToolError) = %+v, %v; want isError", res, err)
	}
	if n := b.Executions("k"); n != 2 {
		t.Errorf("b.Executions(k) = %d; want 2", n)
	}
	c := mcptest.New(&mcptest.Options{StateFile: path})
	defer c.Close()
	if n, p := c.Executions("k"), c.Pending(); n != 2 || len(p) != 0 {
		t.Errorf("fresh reader: Executions(k) = %d, Pending() = %v; want 2 and none", n, p)
	}
}

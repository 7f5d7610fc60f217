//lint:file-ignore SA1019 the proxy relays logging and sampling between host and upstream; SEP-2577 deprecates them from protocol 2026-07-28, and hosts and servers on earlier versions still use them during the deprecation window

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/mcptest"
)

// The proxy tests run agentctl proxy as a host runs it: a child process
// speaking MCP on stdio (or HTTP with --listen), driven by a go-sdk client.
// Upstreams are the payments example, mcptest, and a small notes server;
// the last two are this test binary re-executed.

// envTestUpstream makes this test binary serve the notes server on stdio.
const envTestUpstream = "AGENTCTL_TEST_UPSTREAM"

func init() {
	// Before TestMain: a re-executed test binary serves and exits.
	mcptest.RunIfChild()
	if os.Getenv(envTestUpstream) == "notes" {
		err := notesServer().Run(context.Background(), &mcp.StdioTransport{})
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			fmt.Fprintln(os.Stderr, "notes:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// notesServer has resources, a resource template, a prompt, and a tool
// that logs and reports progress.
func notesServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "v1"}, nil)
	s.AddResource(&mcp.Resource{URI: "note://1", Name: "first note", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello from note 1"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "note://{id}", Name: "a note"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "note at " + req.Params.URI}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"]}}}}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "chatty", Description: "logs and reports progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "notes", Data: "working"}); err != nil {
			return nil, nil, err
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2}); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	return s
}

// proxyEnv is the environment of one proxy run: a private ledger, a fixed
// session, and nothing from the test's own environment but PATH.
func proxyEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	dir := t.TempDir()
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"TMPDIR=" + os.TempDir(),
		"MCPLEDGER_LEDGER=" + filepath.Join(dir, "ledger.db"),
		"MCPLEDGER_SESSION=proxy-test",
	}, extra...)
}

// proxyCommand is agentctl with args and env, in a new session without a
// controlling terminal, so no test can end up waiting on a terminal prompt.
func proxyCommand(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	return proxyCommandContext(context.Background(), t, env, args...)
}

// proxyCommandContext is proxyCommand killed when ctx ends: a hang guard
// for a command that must end on its own.
func proxyCommandContext(ctx context.Context, t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	agentctl, _ := binaries(t)
	cmd := exec.CommandContext(ctx, agentctl, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// hostEvents collects what the proxy sends a test host.
type hostEvents struct {
	ch      chan string
	elicits chan string // elicitation messages
}

// connectStdioHost starts agentctl proxy with args as the host's stdio
// server. The proxy's stderr is kept and shown when the test fails.
func connectStdioHost(t *testing.T, env []string, elicit func(*mcp.ElicitRequest) *mcp.ElicitResult, args ...string) (*mcp.ClientSession, *hostEvents) {
	t.Helper()
	cmd := proxyCommand(t, env, append([]string{"proxy"}, args...)...)
	stderr := &proxyLog{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agentctl proxy stderr:\n%s", stderr.String())
		}
	})
	return dialProxyHost(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, elicit)
}

// proxyTransports are the two ways a host reaches the proxy.
var proxyTransports = []string{"stdio", "http"}

// proxyHost starts agentctl proxy with args and connects a host to it over
// the named transport.
func proxyHost(t *testing.T, over string, env []string, elicit func(*mcp.ElicitRequest) *mcp.ElicitResult, args ...string) (*mcp.ClientSession, *hostEvents) {
	t.Helper()
	if over == "stdio" {
		return connectStdioHost(t, env, elicit, args...)
	}
	endpoint := listeningProxy(t, env, args...)
	return dialProxyHost(t, &mcp.StreamableClientTransport{Endpoint: endpoint}, elicit)
}

// dialProxyHost connects a go-sdk client as the host, answering
// elicitations with elicit (nil: no elicitation capability).
func dialProxyHost(t *testing.T, tr mcp.Transport, elicit func(*mcp.ElicitRequest) *mcp.ElicitResult) (*mcp.ClientSession, *hostEvents) {
	t.Helper()
	ev := &hostEvents{ch: make(chan string, 64), elicits: make(chan string, 16)}
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { ev.ch <- "tools_changed" },
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			ev.ch <- fmt.Sprintf("log:%s:%v", req.Params.Level, req.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			ev.ch <- fmt.Sprintf("progress:%v:%v/%v", req.Params.ProgressToken, req.Params.Progress, req.Params.Total)
		},
	}
	if elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			ev.elicits <- req.Params.Message
			return elicit(req), nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "v1"}, opts).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connecting to agentctl proxy: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ev
}

// next waits for a notification with prefix.
func (ev *hostEvents) next(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-ev.ch:
			if strings.HasPrefix(e, prefix) {
				return e
			}
		case <-deadline:
			t.Fatalf("no %q notification reached the host", prefix)
			return ""
		}
	}
}

// listeningProxy starts agentctl proxy --listen 127.0.0.1:0 with args and
// returns its endpoint, read from the line it prints on stderr.
func listeningProxy(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := proxyCommand(t, env, append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)...)
	var log proxyLog
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting agentctl proxy: %v", err)
	}
	t.Cleanup(func() {
		// SIGTERM is how a service manager stops it; it must exit cleanly.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("agentctl proxy after SIGTERM: %v; want exit 0", err)
		}
		pw.Close()
		if t.Failed() {
			t.Logf("agentctl proxy stderr:\n%s", log.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				lines <- m[1]
			}
		}
	}()
	select {
	case url := <-lines:
		return url
	case <-time.After(2 * time.Minute):
		t.Fatalf("agentctl proxy printed no listening line; stderr:\n%s", log.String())
		return ""
	}
}

var listenLine = regexp.MustCompile(`listening on (http://\S+)`)

// proxyLog is a bytes buffer safe for the writer goroutine of exec.
type proxyLog struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (s *proxyLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *proxyLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func proxyResultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// elicitAnswer answers every confirmation with decision.
func elicitAnswer(decision string) func(*mcp.ElicitRequest) *mcp.ElicitResult {
	return func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision, "reason": "test: " + decision}}
	}
}

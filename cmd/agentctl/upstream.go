package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/telemetry"
)

// connectTimeout bounds connecting and initializing: `go run` of a server
// may compile first, but a command that never speaks MCP must not hang the
// CLI.
const connectTimeout = 2 * time.Minute

// upstream is where tools and call find the MCP server.
type upstream struct {
	server  string      // a command line, run with stdio
	url     string      // a streamable HTTP endpoint
	headers headerFlags // --header values for url
	getenv  func(string) string

	hdr http.Header // headers, resolved by check
}

func (u *upstream) flags(c *cobra.Command) {
	c.Flags().StringVar(&u.server, "server", "", "the MCP server to run over stdio, as one quoted `'CMD ARGS'`")
	c.Flags().StringVar(&u.url, "url", "", "the MCP server's streamable HTTP endpoint `URL`")
	c.Flags().Var(&u.headers, "header", "an HTTP header for --url, as 'Name: value'; the value may be $VAR (from the environment) or @FILE, for a token that must not stand on the command line (repeatable)")
}

// peer is where the server is, for the telemetry of the calls.
func (u *upstream) peer() telemetry.Peer {
	if u.url != "" {
		return telemetry.PeerOfURL(u.url)
	}
	return telemetry.PeerOfStdio()
}

// check validates the flags before anything is opened or started.
func (u *upstream) check() error {
	switch {
	case u.server == "" && u.url == "":
		return exitf(exitUsage, "name the MCP server with --server 'CMD ARGS' (stdio) or --url URL (streamable HTTP)")
	case u.server != "" && u.url != "":
		return exitf(exitUsage, "--server and --url both name a server; pass one of them")
	case u.server != "" && len(u.headers) > 0:
		return exitf(exitUsage, "--header is for --url; a --server over stdio takes no HTTP headers")
	case u.url != "":
		getenv := u.getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		h, err := u.headers.headers(getenv)
		if err != nil {
			return err
		}
		u.hdr = h
		p, err := url.Parse(u.url)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return exitf(exitUsage, "--url %q: want an http:// or https:// endpoint", u.url)
		}
		return nil
	}
	words, err := splitCommand(u.server)
	if err != nil {
		return exitf(exitUsage, "--server %q: %v", u.server, err)
	}
	if len(words) == 0 {
		return exitf(exitUsage, "--server is empty; want a command line such as --server 'go run ./examples/payments'")
	}
	return nil
}

// label names the upstream in messages.
func (u *upstream) label() string {
	if u.url != "" {
		return u.url
	}
	return u.server
}

// connect starts or dials the upstream and initializes an MCP session. A
// failure is exit 5: nothing was sent to any tool, so running the same
// command again once the server is up is safe.
func (u *upstream) connect(ctx context.Context, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agentctl", Version: version}, opts)
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if u.url != "" {
		t := &mcp.StreamableClientTransport{Endpoint: u.url, HTTPClient: withHeaders(u.hdr), MaxRetries: -1, DisableStandaloneSSE: true}
		cs, err := client.Connect(ctx, t, nil)
		if err != nil {
			return nil, exitf(exitUnreachable, "cannot reach the MCP server at %s: %v; check that it runs and --url is right", u.url, err)
		}
		return cs, nil
	}
	words, err := splitCommand(u.server)
	if err != nil || len(words) == 0 {
		return nil, exitf(exitUsage, "--server %q: want a command line such as --server 'go run ./examples/payments'", u.server)
	}
	// A server that never answers initialize is killed as soon as the
	// caller gives up (--timeout, Ctrl-C), not after the grace a closing
	// session gets. Once connected, the session's own close applies.
	killCtx, kill := context.WithCancel(context.Background())
	stopKill := context.AfterFunc(ctx, kill)
	cmd := exec.CommandContext(killCtx, words[0], words[1:]...)
	tail := &tailBuffer{max: 2048}
	cmd.Stderr = tail
	t := &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	cs, err := client.Connect(ctx, t, nil)
	stopKill()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, exitf(exitUnreachable, "cannot start the MCP server: %v; check --server", err)
		}
		msg := fmt.Sprintf("cannot reach the MCP server %q: %v", u.server, err)
		if cmd.Process != nil {
			// Let the dead child's last words arrive before quoting them.
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
		if last := tail.lastLine(); last != "" {
			msg += "; it said: " + last
		}
		return nil, exitf(exitUnreachable, "%s; check --server", msg)
	}
	return cs, nil
}

// listTools returns every tool of the session, across pages.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, exitf(exitUnreachable, "listing the server's tools: %v", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// serverName is the upstream's name for the policy and prompts: the name it
// gives itself, else the label of the flags.
func serverName(cs *mcp.ClientSession, u *upstream) string {
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil && ir.ServerInfo.Name != "" {
		return ir.ServerInfo.Name
	}
	return u.label()
}

// splitCommand splits a command line into words the way a POSIX shell does
// for quotes and backslashes, without expanding anything: --server takes
// one quoted string, and no shell is involved.
func splitCommand(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
				continue
			}
			cur.WriteRune(r)
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if escaped {
		return nil, errors.New("trailing backslash")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// tailBuffer keeps the last max bytes written to it: the upstream's stderr,
// quoted when it fails to start.
type tailBuffer struct {
	max int
	mu  sync.Mutex // guards b; exec copies stderr from its own goroutine
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

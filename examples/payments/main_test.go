package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asMainEnv makes the test binary run the payments command instead of the
// tests, so process tests start real server processes without a build.
const asMainEnv = "PAYMENTS_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "payments:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command returns the payments command as a child process.
func command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), asMainEnv+"=1", payments.FaultEnv+"="), env...)
	return cmd
}

// lineLog is a child's stderr: it keeps every line and lets a test wait
// for one.
type lineLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLine waits until a line containing s was written and returns it.
func (l *lineLog) waitLine(t *testing.T, s string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		l.mu.Lock()
		text, changed := l.buf.String(), l.changed
		l.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, s) {
				return line
			}
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("no line with %q after %v; stderr:\n%s", s, d, text)
		}
	}
}

// startStdio starts a payments server process and connects a go-sdk
// client to it over stdio.
func startStdio(t *testing.T, env []string, args ...string) (*mcp.ClientSession, *exec.Cmd, *lineLog) {
	t.Helper()
	cmd := command(env, args...)
	log := newLineLog()
	cmd.Stderr = log
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to payments: %v\n%s", err, log)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd, log
}

// startHTTP starts a payments server process on a free port and returns
// its URL.
func startHTTP(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := command(env, append(args, "-http", "127.0.0.1:0")...)
	log := newLineLog()
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	line := log.waitLine(t, "listening on ", 30*time.Second)
	return strings.TrimSpace(line[strings.Index(line, "http://"):])
}

func payParams(key string) *mcp.CallToolParams {
	return &mcp.CallToolParams{
		Name:      payments.ToolCreate,
		Meta:      mcp.Meta{server.MetaKey: key},
		Arguments: map[string]any{"amount_cents": 1999, "currency": "EUR", "payee": "erin"},
	}
}

// downstreamCounts reads what the downstream database holds for key while
// the server may still be running (SQLite allows both).
func downstreamCounts(t *testing.T, dir, key string) payments.Counts {
	t.Helper()
	ctx := context.Background()
	ds, err := payments.OpenDownstream(ctx, filepath.Join(dir, "p.downstream.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	c, err := ds.Count(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// countCmd runs "payments -count KEY" and decodes its line.
func countCmd(t *testing.T, dir, key string) (c payments.Counts, made int) {
	t.Helper()
	out, err := command(nil, "-db", filepath.Join(dir, "p.db"), "-count", key).Output()
	if err != nil {
		t.Fatalf("payments -count %s: %v", key, err)
	}
	var v struct {
		payments.Counts
		Payments int `json:"payments"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("payments -count output %q: %v", out, err)
	}
	return v.Counts, v.Payments
}

// waitCounts polls the downstream, which the server's dispatcher fills on
// its own schedule, until want holds.
func waitCounts(t *testing.T, dir, key string, want func(payments.Counts) bool) payments.Counts {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := downstreamCounts(t, dir, key)
		if want(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("downstream counts for %s stuck at %+v", key, c)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// -h prints the usage and exits 0; an unknown flag exits 1 saying so.
func TestHelpExitsZero(t *testing.T) {
	out, err := command(nil, "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage of payments") {
		t.Fatalf("payments -h = %v: %s; want exit 0 and the usage", err, out)
	}
	out, err = command(nil, "-no-such-flag").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no-such-flag") {
		t.Fatalf("payments -no-such-flag = %v: %s; want exit 1 naming the flag", err, out)
	}
}

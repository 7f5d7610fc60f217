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
	"github.com/mcpledger/mcpledger/wire"
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
		Meta:      mcp.Meta{wire.MetaKey: key},
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

// -h and --help print the usage and exit 0; an unknown flag exits 1
// saying so.
func TestHelpExitsZero(t *testing.T) {
	for _, flag := range []string{"-h", "--help", "-help"} {
		out, err := command(nil, flag).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Usage of payments") || !strings.Contains(string(out), "-list") {
			t.Fatalf("payments %s = %v: %s; want exit 0 and the usage", flag, err, out)
		}
	}
	out, err := command(nil, "-no-such-flag").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no-such-flag") {
		t.Fatalf("payments -no-such-flag = %v: %s; want exit 1 naming the flag", err, out)
	}
}

// -list to a stdout that cannot take it (a full disk) exits 1 saying so,
// rather than 0 with nothing printed.
func TestListToFullDisk(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer func() { _ = full.Close() }()
	for _, db := range []string{"empty.db", "two.db"} {
		t.Run(db, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), db)
			if db == "two.db" {
				cs, _, _ := startStdio(t, nil, "-db", path)
				for _, key := range []string{"full-1", "full-2"} {
					if res, err := cs.CallTool(context.Background(), payParams(key)); err != nil || res.IsError {
						t.Fatalf("create_payment %s = %v, %+v", key, err, res)
					}
				}
				if err := cs.Close(); err != nil {
					t.Fatal(err)
				}
			}
			cmd := command(nil, "-db", path, "-list")
			cmd.Stdout = full
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "no space left on device") {
				t.Fatalf("payments -list > /dev/full = %v, stderr %q; want exit 1 saying no space is left", err, stderr.String())
			}
		})
	}
}

// -list prints the payments in the database, newest first, with the key
// each was made under.
func TestListPayments(t *testing.T) {
	db := filepath.Join(t.TempDir(), "pay.db")
	out, err := command(nil, "-db", db, "-list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no payments in "+db) {
		t.Fatalf("payments -list of an empty database = %v: %s; want exit 0 saying there are none", err, out)
	}
	cs, _, _ := startStdio(t, nil, "-db", db)
	var ids []string
	for _, key := range []string{"list-1", "list-2"} {
		res, err := cs.CallTool(context.Background(), payParams(key))
		if err != nil || res.IsError {
			t.Fatalf("create_payment %s = %v, %+v", key, err, res)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		id, _ := sc["payment_id"].(string)
		ids = append(ids, id)
	}
	cs.Close()
	out, err = command(nil, "-db", db, "-list").Output()
	if err != nil {
		t.Fatalf("payments -list = %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PAYMENT") {
		t.Fatalf("payments -list printed %q; want a header and 2 payments", out)
	}
	for i, want := range []struct{ id, key string }{{ids[1], "list-2"}, {ids[0], "list-1"}} {
		if f := strings.Fields(lines[i+1]); len(f) < 6 || f[0] != want.id || f[1] != "19.99" || f[3] != "erin" || f[5] != want.key {
			t.Errorf("payments -list line %d = %q; want %s, 19.99 EUR to erin, key %s (newest first)", i+1, lines[i+1], want.id, want.key)
		}
	}
}

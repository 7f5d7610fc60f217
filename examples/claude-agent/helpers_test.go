package main

import (
	"bufio"
	"context"
	"database/sql"
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

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	_ "github.com/mattn/go-sqlite3"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// binDir holds the programs the tests build: the payments example and
// agentctl from the repository's root module, and this example itself.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "claude-agent-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var builds sync.Map // program name -> *build

type build struct {
	once sync.Once
	path string
	err  error
}

// program builds name once: "payments" and "agentctl" in the root module
// (their own go.mod and go.sum), "claude-agent" here.
func program(t *testing.T, name string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(name, &build{})
	b := v.(*build)
	b.once.Do(func() {
		dir, pkg := "../..", "./examples/payments"
		switch name {
		case "agentctl":
			pkg = "./cmd/agentctl"
		case "claude-agent":
			dir, pkg = ".", "."
		}
		b.path = filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// world is one test's files: the payments database and the agent's ledger.
type world struct {
	dir      string
	payments string // the payments server's database
	ledger   string // the agent's ledger
}

func newWorld(t *testing.T) *world {
	dir := t.TempDir()
	return &world{dir: dir, payments: filepath.Join(dir, "payments.db"), ledger: filepath.Join(dir, "agent.db")}
}

// stdio is the command that serves the payments example over stdio.
func (w *world) stdio(t *testing.T) []string {
	return []string{program(t, "payments"), "-db", w.payments}
}

// serveHTTP starts the payments example over streamable HTTP on loopback,
// as a process of its own, and returns its endpoint.
func (w *world) serveHTTP(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(program(t, "payments"), "-db", w.payments, "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Logf("SIGTERM payments: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			t.Logf("payments exited: %v", err)
		}
	})
	addr := regexp.MustCompile(`listening on (http://\S+)/`)
	lines := lineReader(stderr)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("payments exited before it listened")
			}
			if m := addr.FindStringSubmatch(line); m != nil {
				go drain(lines)
				return m[1] + "/mcp"
			}
		case <-deadline:
			t.Fatal("payments did not listen within 30s")
		}
	}
}

// lineReader sends r's lines until it ends.
func lineReader(r io.Reader) <-chan string {
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

func drain(lines <-chan string) {
	for range lines {
	}
}

// paid counts the payments in the payments server's own database.
func (w *world) paid(t *testing.T) int {
	t.Helper()
	if _, err := os.Stat(w.payments); os.IsNotExist(err) {
		return 0
	}
	db, err := sql.Open("sqlite3", "file:"+w.payments+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM payments`).Scan(&n); err != nil {
		t.Fatalf("counting payments: %v", err)
	}
	return n
}

// paymentIDs are the ids in the payments database.
func (w *world) paymentIDs(t *testing.T) []string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+w.payments+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id FROM payments ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// records are the agent's ledger records of tool.
func (w *world) records(t *testing.T, tool string) []*ledger.Record {
	t.Helper()
	st, err := sqlite.Open(context.Background(), w.ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, err := st.List(context.Background(), ledger.Filter{Tenant: "default", Layer: ledger.LayerClient, Tool: tool, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page.Records
}

// serverRecord is the payments server's own create_payment record of key
// (the client's wire key), from its ledger beside its database.
func (w *world) serverRecord(t *testing.T, key string) *ledger.Record {
	t.Helper()
	path := strings.TrimSuffix(w.payments, ".db") + ".ledger.db"
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, err := st.List(context.Background(), ledger.Filter{Tenant: "default", Layer: ledger.LayerServer, Tool: "create_payment", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		if strings.HasSuffix(r.Key, key) {
			return r
		}
	}
	t.Fatalf("the payments server holds no create_payment record of key %s (%d records)", key, len(page.Records))
	return nil
}

// config runs the agent in this process against api.
func (w *world) config(api *scriptedAPI, server []string) Config {
	return Config{
		Server: server, Ledger: w.ledger, Chain: "order-1001", Yes: true,
		Model: "scripted", Prompt: defaultPrompt, MaxTokens: 256, MaxTurns: 10,
		API:    []option.RequestOption{option.WithBaseURL(api.URL), option.WithAPIKey("scripted"), option.WithMaxRetries(0)},
		Stderr: io.Discard,
	}
}

// payment is the model's create_payment input.
func payment(cents int) map[string]any {
	return map[string]any{"amount_cents": cents, "currency": "EUR", "payee": "ACME Corp", "memo": "invoice 1001"}
}

var paymentID = regexp.MustCompile(`pay_[0-9a-f]{16}`)

// keyIn is the key a tool result's text names ("key K").
var keyIn = regexp.MustCompile(`key ([A-Za-z0-9._:~-]+)`)

func keyOf(t *testing.T, text string) string {
	t.Helper()
	m := keyIn.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no key in %q", text)
	}
	return strings.TrimSuffix(m[1], ".")
}

// Command agent is the kill suite's agent: a small program on package
// client that pays with explicit idempotency keys through an MCP server
// (agentctl proxy, in the suite) and writes what it got for each key to a
// journal it fsyncs, so a test can compare the journal with the ledgers and
// the downstream after any process was SIGKILLed.
//
//	agent -ledger agent.db -journal agent.jsonl -keys k1,k2 -url http://127.0.0.1:8080/
//	agent -ledger agent.db -journal agent.jsonl -keys k1,k2 -- agentctl proxy -- payments -db p.db
//
// With -sdk mcpgo the agent is an mcp-go client through package mcpgo
// instead of a go-sdk client through package client.
//
// It calls create_payment once per key, in order, and exits 0 once every
// key has an answer (whatever it was). Run again with the same keys, it
// replays the answered ones from its ledger and finishes the rest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/e2e/internal/journal"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

type config struct {
	ledger, tenant, journal, url string
	sdk                          string
	durability                   ledger.Durability
	keys                         []string
	command                      []string
	lease, wait, attempt         time.Duration
	retryFor                     time.Duration
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	var keys, durability string
	fs.StringVar(&cfg.ledger, "ledger", "", "the agent's ledger: a SQLite file or a postgres:// URL")
	fs.StringVar(&cfg.tenant, "tenant", "agent", "ledger tenant")
	fs.StringVar(&cfg.journal, "journal", "", "journal file (JSON lines, appended and fsynced)")
	fs.StringVar(&keys, "keys", "", "comma-separated idempotency keys, one create_payment each")
	fs.StringVar(&cfg.sdk, "sdk", "gosdk", "the agent's MCP SDK: gosdk (package client) or mcpgo (package mcpgo)")
	fs.StringVar(&durability, "durability", "durable", "durable, or write-behind: each call's outcome is written behind (ledger.WriteBehind)")
	fs.StringVar(&cfg.url, "url", "", "the server's streamable HTTP endpoint; without it the arguments after -- start a stdio server")
	fs.DurationVar(&cfg.lease, "lease", time.Second, "PROCESSING lease of a call, renewed while it runs")
	fs.DurationVar(&cfg.wait, "wait", 5*time.Second, "how long a call waits for an earlier execution of its key")
	fs.DurationVar(&cfg.attempt, "attempt-timeout", 10*time.Second, "bound of one attempt")
	fs.DurationVar(&cfg.retryFor, "retry-for", 20*time.Second, "how long one call keeps retrying")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.command = fs.Args()
	if keys != "" {
		cfg.keys = strings.Split(keys, ",")
	}
	switch {
	case cfg.ledger == "" || cfg.journal == "" || len(cfg.keys) == 0:
		return errors.New("-ledger, -journal and -keys are required")
	case (cfg.url == "") == (len(cfg.command) == 0):
		return errors.New("give either -url or a server command after --")
	case cfg.sdk != "gosdk" && cfg.sdk != "mcpgo":
		return fmt.Errorf("-sdk %q: want gosdk or mcpgo", cfg.sdk)
	case durability == "write-behind":
		cfg.durability = ledger.WriteBehind
	case durability != "durable":
		return fmt.Errorf("-durability %q: want durable or write-behind", durability)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return pay(ctx, cfg, stdout, stderr)
}

func pay(ctx context.Context, cfg config, stdout, stderr io.Writer) (err error) {
	store, err := openLedger(ctx, cfg.ledger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	j, err := journal.Open(cfg.journal)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, j.Close()) }()

	// A previous run of this agent may have died holding leases; the
	// ledger sees that its owner process is gone and makes those records
	// UNKNOWN when this run asks for their keys.
	var pay1 func(ctx context.Context, key string) journal.Entry
	if cfg.sdk == "mcpgo" {
		c, derr := dialMCPGo(ctx, cfg, store, stderr)
		if derr != nil {
			return derr
		}
		// The suite kills and cuts the servers on purpose (a stdio child
		// may end on SIGPIPE): how the session ended is not this agent's
		// result, its journal is.
		defer func() { _ = c.Close() }()
		// Package mcpgo has no Durability option: the stores take it from
		// the context, where package client puts its own.
		pay1 = func(ctx context.Context, key string) journal.Entry {
			return callMCPGo(ledger.WithDurability(ctx, cfg.durability), c, key)
		}
	} else {
		c, derr := dialGoSDK(ctx, cfg, store, stderr)
		if derr != nil {
			return derr
		}
		defer func() { _ = c.Close() }() // as above
		pay1 = func(ctx context.Context, key string) journal.Entry { return call(ctx, c, key) }
	}
	for _, key := range cfg.keys {
		if err := j.Write(journal.Entry{Event: journal.EventIssue, Key: key, PID: os.Getpid()}); err != nil {
			return err
		}
		// The suite times its kills from this line.
		if _, err := fmt.Fprintln(stdout, "agent: issued", key); err != nil {
			return err
		}
		e := pay1(ctx, key)
		e.PID = os.Getpid()
		if err := j.Write(e); err != nil {
			return err
		}
	}
	return nil
}

// dialGoSDK is the agent on go-sdk: package client's Client.
func dialGoSDK(ctx context.Context, cfg config, store ledger.Store, stderr io.Writer) (*client.Client, error) {
	return client.Dial(ctx, connector(cfg, stderr), store, &client.Options{
		Tenant: cfg.tenant, Session: "kill-suite", Policy: payAll,
		Lease: cfg.lease, InProgressWait: cfg.wait, AttemptTimeout: cfg.attempt,
		Retry: cfg.retry(), Logger: warnings(stderr), Durability: cfg.durability,
	})
}

// payAll is the policy of both agents: the kill suite pays without asking.
var payAll = &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow, Note: "the kill suite pays without asking"}}}

// retry is the retry policy of both agents: a call keeps trying, under
// its key, for retryFor.
func (cfg config) retry() *retry.Policy {
	return &retry.Policy{
		MaxAttempts: 1000, InitialInterval: 20 * time.Millisecond,
		MaxInterval: 300 * time.Millisecond, MaxElapsed: cfg.retryFor,
	}
}

func warnings(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// call pays once with key and describes the answer.
func call(ctx context.Context, c *client.Client, key string) journal.Entry {
	out, err := c.Call(client.WithKey(ctx, key), &mcp.CallToolParams{Name: "create_payment", Arguments: journal.Arguments(key)})
	return describe(key, out, err)
}

// describe is the journal entry of the answer to key, on either SDK.
func describe(key string, out *client.Outcome, err error) journal.Entry {
	e := journal.Entry{Event: journal.EventAnswer, Key: key}
	if err != nil {
		e.Outcome, e.Error = errOutcome(err), err.Error()
		var ce *client.Error
		if errors.As(err, &ce) {
			e.State = string(ce.State)
		}
		return e
	}
	e.Replayed, e.Attempts = out.Replayed, out.Attempts
	if out.Record != nil {
		e.State = string(out.Record.State)
	}
	journal.Describe(out.Result, &e)
	return e
}

func errOutcome(err error) string {
	switch {
	case errors.Is(err, client.ErrOutcomeUnknown):
		return journal.OutcomeUnknown
	case errors.Is(err, client.ErrNotSent):
		return journal.OutcomeNotSent
	case errors.Is(err, ledger.ErrInProgress):
		return journal.OutcomeInProgress
	case errors.Is(err, client.ErrDenied):
		return journal.OutcomeDenied
	}
	return journal.OutcomeError
}

// connector opens a session to the server: a new child process for a stdio
// command (the client calls it again after the child died), or a new HTTP
// session.
func connector(cfg config, stderr io.Writer) client.ConnectFunc {
	impl := &mcp.Implementation{Name: "kill-suite-agent", Version: "v1"}
	return func(ctx context.Context) (*mcp.ClientSession, error) {
		var t mcp.Transport
		if cfg.url != "" {
			// No SSE resumption: a proxy that died is noticed at once and
			// the call is retried under its key on a new session.
			t = &mcp.StreamableClientTransport{Endpoint: cfg.url, MaxRetries: -1}
		} else {
			cmd := exec.Command(cfg.command[0], cfg.command[1:]...)
			cmd.Stderr = stderr
			t = &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}
		}
		return mcp.NewClient(impl, nil).Connect(ctx, t, nil)
	}
}

func openLedger(ctx context.Context, target string) (ledger.Store, error) {
	if postgres.IsURL(target) {
		return postgres.Open(ctx, target, nil)
	}
	return sqlite.Open(ctx, target, nil)
}

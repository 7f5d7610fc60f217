// Command claude-agent is an agent built on anthropic-sdk-go's tool runner
// and its MCP helper, whose tool calls are made safe to repeat by
// mcpledger's client middleware. The runner and the helper are used as
// they come: the helper's tools call session.CallTool on the session they
// were given, and the middleware on that session's client puts every call
// through the ledger. The ledger tools (ledger_status, ledger_list) sit
// beside the server's, on an in-process session.
//
//	export ANTHROPIC_API_KEY=...
//	go build -o payments ../payments   # from the repository root: go build ./examples/payments
//	go run . -server './payments -db payments.db' -ledger agent.db -yes
//	go run . -url http://127.0.0.1:8080/mcp -chain order-1001 -prompt 'Pay 12.50 EUR to ACME'
//
// A run prints its chain id; started again with the same -chain (after a
// crash, say) it derives the same keys, so a payment made before the crash
// is answered from the ledger, or from the key-aware payments server,
// never made twice. Without -yes, create_payment waits in the approval
// queue: the model is told to wait, a person runs agentctl ledger approve
// KEY --ledger agent.db, and the model's next identical call runs once.
//
// The example is its own Go module, so the library's go.mod gains nothing
// from anthropic-sdk-go.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mcpledger/mcpledger/confirm"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "claude-agent:", err)
		os.Exit(1)
	}
}

// defaultPrompt is the task of a run that names none.
const defaultPrompt = "Pay 12.50 EUR (1250 cents) to ACME Corp for invoice 1001, then tell me the payment id."

// defaultSystem tells the model how the tools behave.
const defaultSystem = "You are a payments agent. create_payment moves money; every call goes through a ledger, " +
	"so a repeated call returns the first call's result instead of paying again. When a tool result says a call " +
	"awaits approval or that its outcome is unknown, tell the user and do not look for another way to pay. " +
	"ledger_status and ledger_list tell you what happened to earlier calls."

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("claude-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := Config{Out: stdout, Stderr: stderr}
	server := fs.String("server", "", "MCP server to start over stdio, as 'COMMAND ARGS' (e.g. 'payments -db payments.db')")
	fs.StringVar(&cfg.URL, "url", "", "streamable HTTP endpoint of the MCP server, instead of -server")
	fs.StringVar(&cfg.Ledger, "ledger", "claude-agent.ledger.db", "the agent's ledger (SQLite file)")
	fs.StringVar(&cfg.Tenant, "tenant", "", "tenant of the agent's records (default \"default\")")
	fs.StringVar(&cfg.Session, "session", "", "ledger session of this run (default: a new one)")
	fs.StringVar(&cfg.Chain, "chain", "", "chain id the keys derive from; the same chain after a crash pays nothing twice (default: a new one, printed)")
	fs.StringVar(&cfg.Key, "key", "", "one idempotency key for every call of a tool in this run (a business operation id), instead of -chain")
	policy := fs.String("policy", "", "policy file (JSON, as agentctl's); default: create_payment waits in the approval queue")
	fs.BoolVar(&cfg.Yes, "yes", false, "approve every call the policy asks about")
	model := fs.String("model", string(anthropic.ModelClaudeSonnet5_5), "Claude model")
	fs.StringVar(&cfg.Prompt, "prompt", defaultPrompt, "the user's request")
	fs.Int64Var(&cfg.MaxTokens, "max-tokens", 1024, "most tokens of one answer")
	fs.IntVar(&cfg.MaxTurns, "max-turns", 10, "most Messages API calls (0: until the model stops)")
	verbose := fs.Bool("v", false, "log the ledger's work")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; the request goes in -prompt", fs.Args())
	}
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		return errors.New("ANTHROPIC_API_KEY is not set: export your API key (and ANTHROPIC_BASE_URL for another endpoint)")
	}
	if *server != "" && cfg.URL != "" {
		return errors.New("give -server or -url, not both")
	}
	cfg.Server = strings.Fields(*server)
	cfg.Model = anthropic.Model(*model)
	cfg.System = defaultSystem
	if *policy != "" {
		p, err := confirm.Load(*policy)
		if err != nil {
			return err
		}
		cfg.Policy = p
	}
	if cfg.Key != "" && cfg.Chain != "" {
		return errors.New("give -chain or -key, not both")
	}
	if cfg.Key == "" && cfg.Chain == "" {
		cfg.Chain = "run-" + randomHex(6)
		// On stderr, where a failed write has nowhere left to go.
		_, _ = fmt.Fprintf(stderr, "claude-agent: chain %s (run again with -chain %s to resume it)\n", cfg.Chain, cfg.Chain)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := Run(ctx, cfg)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("claude-agent: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

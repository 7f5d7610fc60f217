package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os/exec"
	"slices"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicmcp "github.com/anthropics/anthropic-sdk-go/v2/mcp"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/wire"
)

// Config is one run of the agent.
type Config struct {
	// Server is the command of an MCP server over stdio (the payments
	// example, say); URL, when set instead, is a streamable HTTP endpoint.
	Server []string
	URL    string
	// Ledger is the agent's SQLite ledger file (created 0600).
	Ledger string
	// Tenant and Session scope the agent's records (client.Options).
	Tenant, Session string
	// Chain is the run's chain id: the keys of its calls derive from it,
	// so a run started again with the same chain (after a crash, say)
	// derives the same keys and pays nothing twice. Key, when set instead,
	// is the one key of every call of a tool in the run: the run is that
	// one business operation.
	Chain, Key string
	// Policy decides which calls run, ask or wait in the queue; nil is
	// the default policy (create_payment asks), queueing a call when no
	// one can be asked. Yes approves every call the policy asks about.
	Policy *confirm.Policy
	Yes    bool
	// Model, Prompt, System and MaxTokens make the first request;
	// MaxTurns bounds the Messages API calls (0: until the model stops).
	Model     anthropic.Model
	Prompt    string
	System    string
	MaxTokens int64
	MaxTurns  int
	// API are options for the Anthropic client (its base URL, its key);
	// the SDK's defaults read ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.
	API []option.RequestOption
	// Out gets what the model says and which tools it calls; Stderr gets
	// the stdio server's standard error. Logger logs the ledger's work.
	Out    io.Writer
	Stderr io.Writer
	Logger *slog.Logger
}

// Run runs the tool runner to the model's last answer, every tool call
// going through the ledger middleware on the session the runner uses.
func Run(ctx context.Context, cfg Config) (_ *anthropic.BetaMessage, err error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	transport, err := transportOf(cfg)
	if err != nil {
		return nil, err
	}
	store, err := sqlite.Open(ctx, cfg.Ledger, nil)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	// The middleware: one configuration, the same as the wrapper's.
	opts := &client.Options{Tenant: cfg.Tenant, Session: cfg.Session, Policy: cfg.Policy, Logger: cfg.Logger}
	if opts.Policy == nil {
		opts.Policy = confirm.Default()
		opts.Policy.WhenNoOneCanBeAsked = confirm.Queue
	}
	if cfg.Yes {
		opts.Confirmer = confirm.Static{Answer: confirm.Answer{Decision: ledger.DecisionApproved, Reason: "claude-agent -yes"}}
	}
	mw := client.NewMiddleware(store, opts)
	defer func() { err = errors.Join(err, mw.Close()) }() // writes the call events still queued
	mc := mcp.NewClient(&mcp.Implementation{Name: "claude-agent", Version: "v1"}, nil)
	// ShowReplays first: the MCP helper hands the model a result's content
	// only, so a replay says so in its text too.
	mc.AddSendingMiddleware(client.ShowReplays, mw.Wrap)

	session, err := mc.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("claude-agent: connect to the MCP server: %w", err)
	}
	// The answers are in by then: how the server's session ended changes
	// none of them.
	defer func() { _ = session.Close() }()
	// The ledger tools, in-process, as a second session beside the
	// server's: the model asks them as it calls any tool.
	ledgerSession, err := mw.ConnectLedger(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ledgerSession.Close() }() // in-process, as above

	tools, err := betaTools(ctx, session)
	if err != nil {
		return nil, err
	}
	ledgerTools, err := betaTools(ctx, ledgerSession)
	if err != nil {
		return nil, err
	}
	tools = append(tools, ledgerTools...)

	api := anthropic.NewClient(cfg.API...)
	params := anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model:     cfg.Model,
			MaxTokens: cfg.MaxTokens,
			Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(cfg.Prompt))},
		},
		MaxIterations: cfg.MaxTurns,
		// The whole history goes with every request, as the Messages API
		// has always taken it.
		DisableThread: true,
	}
	if cfg.System != "" {
		params.System = []anthropic.BetaTextBlockParam{{Text: cfg.System}}
	}
	runner := api.Beta.Messages.NewToolRunner(tools, params)

	// The tool runner calls session.CallTool with this context: the chain
	// (or the key) reaches the middleware through it.
	if cfg.Key != "" {
		ctx = client.WithKey(ctx, cfg.Key)
	} else {
		ctx = client.WithChain(ctx, cfg.Chain)
	}
	var last *anthropic.BetaMessage
	for msg, err := range runner.All(ctx) {
		if err != nil {
			return nil, err
		}
		last = msg
		if err := say(cfg.Out, msg); err != nil {
			return nil, fmt.Errorf("claude-agent: printing the transcript: %w; the ledger holds the calls made: run again with the same chain to resume", err)
		}
	}
	if last == nil {
		return nil, errors.New("claude-agent: the model sent no message")
	}
	return last, nil
}

// transportOf is the MCP transport cfg names.
func transportOf(cfg Config) (mcp.Transport, error) {
	if cfg.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: cfg.URL}, nil
	}
	if len(cfg.Server) == 0 || cfg.Server[0] == "" {
		return nil, errors.New("claude-agent: no MCP server: give -server 'COMMAND ARGS' or -url URL")
	}
	cmd := exec.Command(cfg.Server[0], cfg.Server[1:]...)
	cmd.Stderr = cfg.Stderr
	return &mcp.CommandTransport{Command: cmd}, nil
}

// betaTools are the session's tools as the tool runner's, through
// anthropic-sdk-go's MCP helper: their Execute calls session.CallTool.
// The idempotency_key argument is left out of what the model sees: keys
// are the ledger's to choose, never the model's.
func betaTools(ctx context.Context, s *mcp.ClientSession) ([]anthropic.BetaTool, error) {
	var tools []*mcp.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("claude-agent: list tools: %w", err)
		}
		tools = append(tools, withoutKeyArgument(t))
	}
	return anthropicmcp.NewBetaTools(tools, s)
}

// withoutKeyArgument is t with the idempotency_key property dropped from
// its input schema (a copy; t is left as it is).
func withoutKeyArgument(t *mcp.Tool) *mcp.Tool {
	schema, ok := t.InputSchema.(map[string]any)
	if !ok {
		return t
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		return t
	}
	if _, ok := props[wire.ArgKey]; !ok {
		return t
	}
	s := maps.Clone(schema)
	p := maps.Clone(props)
	delete(p, wire.ArgKey)
	s["properties"] = p
	if req, ok := s["required"].([]any); ok {
		s["required"] = slices.DeleteFunc(slices.Clone(req), func(v any) bool { return v == wire.ArgKey })
	}
	cp := *t
	cp.InputSchema = s
	return &cp
}

// say prints what the model said and which tools it called.
func say(w io.Writer, msg *anthropic.BetaMessage) error {
	for _, block := range msg.Content {
		var err error
		switch b := block.AsAny().(type) {
		case anthropic.BetaTextBlock:
			_, err = fmt.Fprintln(w, "claude:", b.Text)
		case anthropic.BetaToolUseBlock:
			_, err = fmt.Fprintf(w, "tool: %s %s\n", b.Name, b.Input)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

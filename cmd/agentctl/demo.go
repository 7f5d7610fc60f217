package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/confirm/terminal"
	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func init() { register(newDemoCmd) }

func newDemoCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "demo [--ledger PATH] [--json]",
		Short: "Watch the ledger survive lost answers, stalls, re-plans, crashes and key reuse (no setup)",
		Long: `demo starts the payments example server and a scripted agent that pays
through the ledger while things go wrong: an answer is lost, the server
stalls, the model plans the same call again, the server crashes and
restarts, a key is reused with other arguments, and a sensitive call needs
a person. It tells what happened at each step and ends with a table: every
operation executed once at the server, however often it was sent.

A payment asks for confirmation on the terminal when stdin is one; otherwise
the demo's own policy approves it. The ledger is temporary unless --ledger
names one; the payments database always is.`,
		Example: `  agentctl demo
  agentctl demo --json`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			return a.demo(c.Context(), c.Flag("ledger").Changed)
		}),
	}
	return c
}

func (a *app) demo(ctx context.Context, ownLedger bool) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the agentctl binary to start the payments server: %w", err)
	}
	return a.runDemo(ctx, ownLedger, exe, a.demoConfirmer())
}

// runDemo runs the story with exe as the agentctl that serves payments and
// confirmer answering the sensitive calls.
func (a *app) runDemo(ctx context.Context, ownLedger bool, exe string, confirmer confirm.Confirmer) (err error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "agentctl-demo-")
	if err != nil {
		return fmt.Errorf("creating the demo folder: %w", err)
	}
	defer a.closeOrWarn("the demo folder "+dir, func() error { return os.RemoveAll(dir) })

	var st ledger.Store
	ledgerPath := filepath.Join(dir, "ledger.db")
	if ownLedger {
		if st, err = a.ledger(ctx, readWrite); err != nil {
			return err
		}
		ledgerPath = postgres.MaskDSN(a.ledgerURL)
	} else {
		s, oerr := sqlite.Open(ctx, ledgerPath, nil)
		if oerr != nil {
			return fmt.Errorf("opening the demo ledger: %w", oerr)
		}
		defer func() { err = errors.Join(err, s.Close()) }()
		st = s
	}

	// The bank's back office: the same payments database the server
	// writes, read to count payments and to settle what the ledger could
	// not know.
	payDB := filepath.Join(dir, "payments.db")
	bank, err := payments.Open(ctx, payments.Config{DB: payDB, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("opening the payments database: %w", err)
	}
	defer func() { err = errors.Join(err, bank.Close()) }()

	story := a.io.Out
	if a.json {
		story = a.io.Err // stdout is for the one JSON object
	}
	run := randomID()
	d := &demo{
		a: a, ctx: ctx, out: story, exe: exe, payDB: payDB, store: st, bank: bank,
		run: run, session: "demo-" + run, confirmer: confirmer,
	}
	width := a.proseWidth(story)
	a.fprintf(story, "%s\n", wrapIndent("mcpledger demo: an agent pays through the ledger while things go wrong.", width, "", "  "))
	a.fprintf(story, "%s\n", wrapIndent(fmt.Sprintf("ledger %s, session %s, payments server: %s %s", ledgerPath, d.session, filepath.Base(exe), demoPaymentsCmd), width, "", "  "))
	for _, step := range d.steps() {
		if err := step(); err != nil {
			return err
		}
	}
	sum, err := d.summary(time.Since(start))
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(sum)
	}
	return d.printTable(sum)
}

// demoConfirmer asks a person at a terminal; without one, the demo's own
// policy approves its payments for the rest of the session.
func (a *app) demoConfirmer() confirm.Confirmer {
	if stdinKind(a.io.In) == stdinTerminal {
		return &terminal.Prompt{In: a.io.In, Out: a.io.Err, Accessible: a.getenv("ACCESSIBLE") != ""}
	}
	return confirm.Static{Answer: confirm.Answer{
		Decision: ledger.DecisionApprovedSession, By: "demo policy",
		Reason: "stdin is not a terminal, so the demo approves its own scripted payments",
	}}
}

func randomID() string {
	b := make([]byte, 4)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		panic("agentctl: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

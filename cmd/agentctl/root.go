package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpledger/mcpledger/ledger"
)

// commands holds the constructors of the subcommands. Each command file
// appends its own in an init function, so adding a command (proxy, demo) is
// adding a file, without touching the others.
var commands []func(*app) *cobra.Command

func register(newCmd func(*app) *cobra.Command) { commands = append(commands, newCmd) }

// stdio is where a run reads and writes; tests and Example pass buffers.
type stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// app is the state shared by every command of one run: the global flags and
// the lazily opened ledger.
type app struct {
	io     stdio
	getenv func(string) string

	ledgerURL string
	tenant    string
	layer     string // agentctl ledger --layer
	json      bool
	wide      bool
	wait      time.Duration

	ledgerKeyFile string // --ledger-key-file; see ledger_rekey.go

	store      ledger.Store
	closeStore func() error
	// sqlitePath is the SQLite ledger file opened, to explain its faults.
	sqlitePath string

	// envDefaults maps a flag default taken from the environment to the
	// default shown in help instead (see hideEnvDefaults).
	envDefaults map[string]string
	// status is the activity line on a terminal's stderr; nil (quiet)
	// under --json or without a terminal, unless call --progress=plain.
	status *status
	// callee is the upstream a call waits for, named on the status line
	// once the ledger has claimed the call (store_wrap.go).
	callee string
	// busy is when ledger writes waited for a lock another process held.
	busy busySpan

	obs observability // logging and OpenTelemetry export (otel.go)

	outMu  sync.Mutex // guards outErr
	outErr error      // the first failed write of the command's output (printf)
}

// run executes one agentctl command line and returns the exit code.
func run(ctx context.Context, args []string, s stdio, getenv func(string) string) int {
	a := &app{io: s, getenv: getenv, envDefaults: map[string]string{}}
	a.busy.slot = make(chan struct{}, 1)
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	strictCompletion(root)
	err := root.ExecuteContext(ctx)
	a.status.close()
	if cerr := a.close(); err == nil && cerr != nil {
		err = withCode(exitFailed, fmt.Errorf("closing the ledger: %w", cerr))
	}
	err = a.explainLedger(err)
	if oerr := a.lostOutput(); err == nil && oerr != nil {
		err = withCode(exitFailed, fmt.Errorf("writing the output failed: %w; the command itself ran: check where stdout goes (agentctl ledger show KEY prints a call's result again)", oerr))
	}
	if oerr := a.stopObservability(); oerr != nil {
		// The command's own result stands; only the export failed.
		a.logger().Error("telemetry", "err", oerr)
	}
	if err == nil {
		return exitOK
	}
	return a.report(err)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentctl",
		Short: "Call MCP tools through an idempotency ledger, and inspect the ledger",
		Long: `agentctl calls MCP tools through the mcpledger idempotency ledger, so a
repeated call returns the first call's result instead of a second side effect.

Exit codes: 0 done, 1 tool error or failed, 2 bad usage or input (also
arguments the server rejected before the tool ran), 3 denied, 4 outcome
unknown or still in progress, 5 upstream or ledger unreachable, 6 awaiting
approval, 130 interrupted (nothing final recorded).`,
		Version:       versionText(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Help and completion are generated; a bare "agentctl" shows help,
		// and a mistyped command is one line naming the nearest ones
		// (cobra's own message spans four lines).
		Args: subcommandArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
		Example: `  agentctl demo
  agentctl call --server 'go run ./examples/payments' --key order-42 \
      create_payment amount_cents=1250 currency=EUR payee=acme
  agentctl ledger list --state unknown`,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitf(exitUsage, "%v; see %s --help", err, c.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.ledgerURL, "ledger", a.env("MCPLEDGER_LEDGER", ""),
		"the ledger: a SQLite file `PATH` or a postgres:// URL (env MCPLEDGER_LEDGER; default $XDG_STATE_HOME/mcpledger/ledger.db, else ~/.local/state/mcpledger/ledger.db)")
	pf.StringVar(&a.ledgerKeyFile, "ledger-key-file", a.env("MCPLEDGER_LEDGER_KEY_FILE", ""),
		"encrypt stored arguments and results with the keys in `FILE` (env MCPLEDGER_LEDGER_KEY_FILE; see agentctl ledger rekey --help)")
	pf.StringVar(&a.tenant, "tenant", a.env("MCPLEDGER_TENANT", "default"),
		"the `TENANT` whose records are read and written (env MCPLEDGER_TENANT)")
	pf.BoolVar(&a.json, "json", false, "print one JSON object per result")
	pf.DurationVar(&a.wait, "wait", defaultLedgerWait, "how long a command waits in all, as a `DURATION`, for a SQLite ledger that another process holds locked")
	pf.BoolVar(&a.wide, "wide", false, "print table cells whole, even when the rows are wider than the terminal")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := ledger.ValidateTenant(a.tenant); err != nil {
			return exitf(exitUsage, "--tenant %s: %v", shorten(a.tenant, 40), err)
		}
		if err := ledger.ValidateLayer(a.layer); err != nil {
			return exitf(exitUsage, "--layer %s: %v; the layers are client, proxy and server", shorten(a.layer, 40), err)
		}
		if a.wait <= 0 {
			return exitf(exitUsage, "--wait %s: want a positive duration such as 5s or 1m", a.wait)
		}
		a.status = newStatus(a.io.Err, !a.json && isTerminal(a.io.Err) && a.getenv("TERM") != "dumb", false, func() int { return a.termWidth(a.io.Err) })
		return a.startObservability(c.Context(), c)
	}
	a.addObservabilityFlags(root)
	for _, newCmd := range commands {
		root.AddCommand(newCmd(a))
	}
	a.addLedgerCompletion(root)
	// Every Use line already shows its flags the way DESIGN.md writes them.
	walk(root, func(c *cobra.Command) { c.DisableFlagsInUseLine = true })
	walk(root, a.hideEnvDefaults)
	a.setHelp(root)
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	return root
}

// env returns the environment variable name, or def when it is empty. A
// value taken from the environment becomes a flag's default, and help
// must not print it (a ledger URL holds a password): hideEnvDefaults shows
// def instead.
func (a *app) env(name, def string) string {
	if v := a.getenv(name); v != "" {
		a.envDefaults[v] = def
		return v
	}
	return def
}

// hideEnvDefaults makes help show each flag's own default instead of the
// environment value that replaced it: the flag's help text names the
// variable.
func (a *app) hideEnvDefaults(c *cobra.Command) {
	hide := func(f *pflag.Flag) {
		if def, ok := a.envDefaults[f.DefValue]; ok && f.DefValue != "" {
			f.DefValue = def
		}
	}
	c.Flags().VisitAll(hide)
	c.PersistentFlags().VisitAll(hide)
}

func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

// completeWords makes the shell complete flag from a fixed list.
func completeWords(c *cobra.Command, flag string, words ...string) {
	// The flag is registered by the caller just before; an error here is a
	// programming mistake in this file, caught by the completion test.
	if err := c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(err)
	}
}

// runE adapts a command body: a fault of the ledger's store says so
// (storeFault), any other error without an exit code is a failure (exit
// 1), and arguments are checked before the body runs.
func runE(body func(c *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		return withCode(exitFailed, storeFault(body(c, args)))
	}
}

// strictCompletion makes cobra's completion command refuse a shell it does
// not know, as any mistyped subcommand is refused (exit 2), instead of
// printing its help and exiting 0. Called once the output is set: cobra's
// completion scripts write where the root writes at this point.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = subcommandArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
			c.Example = "  source <(agentctl completion bash)\n  agentctl completion zsh > \"${fpath[1]}/_agentctl\""
			for _, sh := range c.Commands() {
				sh.Example = "  agentctl completion " + sh.Name() + " > agentctl." + sh.Name()
			}
		}
	}
}

// usageArgs checks the number of positional arguments with a message that
// names the usage line.
func usageArgs(min, max int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if missing := positionals(c.Use); len(args) < min && len(missing) > len(args) {
			return exitf(exitUsage, "%s needs %s; usage: %s", c.CommandPath(), strings.Join(missing[len(args):min], " and "), c.UseLine())
		}
		if len(args) < min || (max >= 0 && len(args) > max) {
			return exitf(exitUsage, "%s takes %s; usage: %s", c.CommandPath(), argCount(min, max), c.UseLine())
		}
		return nil
	}
}

// subcommandArgs rejects a mistyped subcommand of a command that only
// groups others, suggesting the nearest names; cobra does this for the root
// command only.
func subcommandArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default, set only on its path
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return exitf(exitUsage, "unknown command %q for %s%s; see %s --help", args[0], c.CommandPath(), hint, c.CommandPath())
}

// positionals lists the required positional arguments a Use line names:
// its upper-case words outside brackets and parentheses ("TOOL" of
// "call [--key K] TOOL [NAME=VALUE ...]"), in order.
func positionals(use string) []string {
	var names []string
	depth := 0
	for _, w := range strings.Fields(use)[1:] {
		open := depth == 0 && !strings.HasPrefix(w, "[") && !strings.HasPrefix(w, "(") && !strings.HasPrefix(w, "-")
		depth += strings.Count(w, "[") + strings.Count(w, "(") - strings.Count(w, "]") - strings.Count(w, ")")
		if open && w == strings.ToUpper(w) && strings.Trim(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
			names = append(names, w)
		}
	}
	return names
}

func argCount(min, max int) string {
	switch {
	case min == max && min == 0:
		return "no arguments"
	case min == max && min == 1:
		return "one argument"
	case min == max:
		return fmt.Sprintf("%d arguments", min)
	case max < 0 && min == 1:
		return "at least one argument"
	case max < 0:
		return fmt.Sprintf("at least %d arguments", min)
	}
	return fmt.Sprintf("%d to %d arguments", min, max)
}

// oneLine folds a multi-line error message into one line: the CLI promises
// one line per error on stderr.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// isTerminal reports whether f is an interactive terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty(f.Fd())
}

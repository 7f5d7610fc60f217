package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/internal/verify"
	"github.com/mcpledger/mcpledger/mcptest"
)

func init() { register(newVerifyCmd) }

type verifyFlags struct {
	up       upstream
	tool     string
	args     string
	countCmd string
	only     []string
	callers  int
}

func newVerifyCmd(a *app) *cobra.Command {
	var f verifyFlags
	c := &cobra.Command{
		Use:   "verify [--server 'CMD ARGS' | --url URL] [--tool NAME --args JSON] [--count-cmd CMD] [--only G3,G7]",
		Short: "Check the guarantees against this ledger and server: a table, exit 0 only when all hold",
		Long: `verify runs the numbered guarantees (G1 ...) against the ledger named by
--ledger and the MCP server named by --server or --url, and prints one row
per guarantee: what it did, its figure, pass, fail or skip (with the
reason). Without a server it checks the ledger alone, with a built-in test
server whose write tool counts its executions.

It makes real calls of --tool with --args (use a test account: a payments
tool pays), in a scratch tenant and layer of its own ("verify") that it
erases afterwards; it never reads or writes other records of the ledger.
The server keeps its own records of those calls.

Executions are counted by --count-cmd: a command run with {key} replaced by
the key the server saw (also in MCPLEDGER_VERIFY_KEY) that prints a number,
or a JSON object whose "executions", "count" or "payments" member is one.
Without it, the guarantees that need a count use the server's answers (a
key-aware server's replay marker) or the ledger's claims, and say so.

Exit codes: 0 every guarantee that ran holds, 1 at least one does not (the
error line names them), 2 bad usage, 5 the server or the ledger could not be
reached.`,
		Example: `  agentctl verify
  agentctl verify --server './payments -db pay.db' --tool create_payment \
      --args '{"amount_cents":1250,"payee":"acme"}' --only G1,G4`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error { return a.verify(c.Context(), &f) }),
	}
	f.up.flags(c)
	f.up.getenv = a.getenv
	fl := c.Flags()
	fl.StringVar(&f.tool, "tool", "", "the side-effect tool to exercise (default: write, of the built-in server)")
	fl.StringVar(&f.args, "args", "", "the tool's arguments as one `JSON` object, or @FILE holding one")
	fl.StringVar(&f.countCmd, "count-cmd", "", "a `CMD` that prints how many times the tool ran for {key}")
	fl.StringSliceVar(&f.only, "only", nil, "run only these guarantees, as `G3,G7`")
	fl.IntVar(&f.callers, "callers", 20, "how many concurrent callers G1 starts")
	return c
}

func (a *app) verify(ctx context.Context, f *verifyFlags) error {
	builtin := f.up.server == "" && f.up.url == ""
	if !builtin {
		if err := f.up.check(); err != nil {
			return err
		}
	}
	if f.callers < 2 {
		return exitf(exitUsage, "--callers %d: want 2 or more", f.callers)
	}
	if !builtin && f.tool == "" {
		return exitf(exitUsage, "name the side-effect tool to exercise with --tool NAME (and its --args JSON)")
	}
	// The calls fail on purpose (a lost response, a killed server): the
	// clients' warnings about them are no news.
	t := verify.Target{Tool: f.tool, Callers: f.callers}
	if f.args != "" {
		args, err := parseArguments(nil, f.args)
		if err != nil {
			return err
		}
		t.Args = make(map[string]any, len(args.base))
		for k, raw := range args.base {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return reasonf(reasonInvalidArgument, "--args: %s: %v", k, err)
			}
			t.Args[k] = v
		}
	}
	st, err := a.ledger(ctx, readWrite)
	if err != nil {
		return err
	}
	t.Store = st
	t.Files = a.ledgerFiles()
	switch {
	case builtin:
		s := mcptest.New(nil)
		t.Dial = s.Transport
		if t.Tool == "" {
			t.Tool = "write"
		}
		if t.Args == nil {
			t.Args = map[string]any{"id": "verify", "amount": 1.0}
		}
		t.Count = func(_ context.Context, key string) (int, error) { return s.Executions(key), nil }
		t.CountBy = "the built-in server"
	case f.up.url != "":
		t.Dial = func(context.Context) (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: f.up.url, HTTPClient: withHeaders(f.up.hdr), MaxRetries: -1, DisableStandaloneSSE: true}, nil
		}
	default:
		kids := &children{}
		defer kids.reap()
		t.Dial = func(context.Context) (mcp.Transport, error) { return kids.start(f.up.server) }
		t.Kill = kids.kill
	}
	if f.countCmd != "" {
		words, err := splitCommand(f.countCmd)
		if err != nil || len(words) == 0 {
			return exitf(exitUsage, "--count-cmd %q: want a command line such as 'payments -db pay.db -count {key}'", f.countCmd)
		}
		t.Count, t.CountBy = countCommand(words), "--count-cmd"
	}
	if t.Args == nil {
		t.Args = map[string]any{}
	}

	if !a.json {
		a.printf("%-4s %-19s %-6s %s\n", "ID", "GUARANTEE", "RESULT", "FIGURE")
	}
	results, err := verify.Run(ctx, t, f.only, func(r verify.Result) { a.printGuarantee(r) })
	switch {
	case errors.Is(err, verify.ErrUnknownGuarantee):
		return exitf(exitUsage, "--only: %v", err)
	case err != nil && len(results) == 0:
		return exitf(exitUnreachable, "%v", err)
	}
	var failed []string
	ran := 0
	for _, r := range results {
		if r.Status != verify.Skip {
			ran++
		}
		if r.Status == verify.Fail {
			failed = append(failed, r.ID+" "+r.Name)
		}
	}
	if len(failed) > 0 {
		also := ""
		if err != nil {
			also = "; also: " + oneLine(err.Error())
		}
		verb := "do not hold"
		if len(failed) == 1 {
			verb = "does not hold"
		}
		return exitf(exitFailed, "%d of %s that ran %s: %s%s", len(failed), plural(ran, "guarantee", "guarantees"), verb, strings.Join(failed, ", "), also)
	}
	if err != nil {
		// Every guarantee held, but the scratch tenants could not be
		// removed (or the run was interrupted).
		return err
	}
	if !a.json {
		held := plural(ran, "guarantee holds", "guarantees hold")
		a.eprintf("%s, %d skipped\n", held, len(results)-ran)
	}
	return nil
}

func (a *app) printGuarantee(r verify.Result) {
	if a.json {
		if err := a.printJSON(r); err != nil {
			a.logger().Error("verify", "err", err)
		}
		return
	}
	mark := map[verify.Status]string{verify.Pass: "pass", verify.Fail: "FAIL", verify.Skip: "skip"}[r.Status]
	head := fmt.Sprintf("%-4s %-19s %-6s ", r.ID, r.Name, mark)
	indent := strings.Repeat(" ", len(head))
	a.printf("%s\n", strings.TrimRight(a.wrapColumn(head, r.Figure, indent), " "))
	if r.Reason != "" {
		a.printf("%s\n", a.wrapColumn(indent+"↳ ", oneLine(r.Reason), indent+"  "))
	}
}

// wrapColumn is a table row whose last column is prose: head, then text
// wrapped to the width of stdout (80 columns in a pipe) onto lines
// indented with rest; --wide keeps it on one line.
func (a *app) wrapColumn(head, text, rest string) string {
	if a.wide {
		return head + text
	}
	return wrapIndent(text, a.proseWidth(a.io.Out), head, rest)
}

// ledgerFiles are the SQLite files of --ledger (none for PostgreSQL).
func (a *app) ledgerFiles() []string {
	target := a.ledgerURL
	if strings.Contains(target, "://") {
		return nil
	}
	if target == "" {
		p, err := a.defaultLedgerPath()
		if err != nil {
			return nil
		}
		target = p
	}
	return []string{target, target + "-wal", target + "-shm"}
}

// countCommand runs words with {key} replaced and reads the count it
// prints.
func countCommand(words []string) verify.Counter {
	return func(ctx context.Context, key string) (int, error) {
		args := make([]string, len(words))
		for i, w := range words {
			args[i] = strings.ReplaceAll(w, "{key}", key)
		}
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "MCPLEDGER_VERIFY_KEY="+key)
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				return 0, fmt.Errorf("%s: %w: %s", filepath.Base(args[0]), err, oneLine(string(ee.Stderr)))
			}
			return 0, err
		}
		return parseCount(out)
	}
}

func parseCount(out []byte) (int, error) {
	s := strings.TrimSpace(string(out))
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return 0, fmt.Errorf("printed %q: want a number or a JSON object", shorten(s, 80))
	}
	for _, k := range []string{"executions", "count", "payments"} {
		if f, ok := m[k].(float64); ok {
			return int(f), nil
		}
	}
	return 0, fmt.Errorf("printed %q: no number named executions, count or payments", shorten(s, 80))
}

// children are the --server processes verify starts, one per session, each
// in its own process group so that G6 can kill it with everything it
// started.
type children struct {
	mu   sync.Mutex // guards cmds
	cmds []*exec.Cmd
}

func (k *children) start(server string) (mcp.Transport, error) {
	words, err := splitCommand(server)
	if err != nil || len(words) == 0 {
		return nil, exitf(exitUsage, "--server %q: want a command line such as --server 'go run ./examples/payments'", server)
	}
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Stderr = &tailBuffer{max: 2048}
	ownGroup(cmd)
	k.mu.Lock()
	k.cmds = append(k.cmds, cmd)
	k.mu.Unlock()
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
}

func (k *children) kill(t mcp.Transport) error {
	ct, ok := t.(*mcp.CommandTransport)
	if !ok || ct.Command.Process == nil {
		return errors.New("not a started --server child")
	}
	return killGroup(ct.Command.Process.Pid)
}

// reap kills whatever a session left behind (a killed server's
// grandchildren are in its group).
func (k *children) reap() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.cmds {
		if c.Process == nil {
			continue
		}
		if err := killGroup(c.Process.Pid); err != nil {
			continue // the group is gone already: its session closed it
		}
	}
}

// plural is "1 guarantee" or "n guarantees".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

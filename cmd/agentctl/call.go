package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
)

func init() { register(newCallCmd) }

type callFlags struct {
	up      upstream
	session string
	key     string
	keySet  bool // --key was given, even empty: an empty key is an invalid key
	newKey  bool
	yes     bool
	args    string
	policy  string
	wait    time.Duration
}

func newCallCmd(a *app) *cobra.Command {
	var f callFlags
	c := &cobra.Command{
		Use:   "call [--server 'CMD ARGS' | --url URL] [--session S] [--key K] [--new] [--yes] TOOL [NAME=VALUE ...] [--args JSON]",
		Short: "Call a tool once: a repeat returns the first result instead of running again",
		Long: `call calls one tool of an MCP server through the ledger.

Arguments are NAME=VALUE words: a VALUE that parses as JSON is that JSON
(1250, true, null, {"a":1}, "quoted"), anything else is a string. --args takes
a JSON object (or @FILE holding one); NAME=VALUE words override its keys.

The operation's key is --key when given. Without it, the same call (tool and
arguments) repeated in the same session within the re-planning window (10
minutes) is recognised as a re-plan and answered from the ledger; --new asks
for a new operation instead. The session is --session, else
MCPLEDGER_SESSION, else this shell's terminal session, so running the same
command twice in one terminal replays it.

A tool the policy marks sensitive (by default names with pay, send, delete,
transfer, publish ... and destructive tools) asks for confirmation on the
terminal, with plain prompts when stdin is a pipe or ACCESSIBLE is set;
--yes approves; with no one to ask the call is denied.`,
		Args: usageArgs(1, -1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			f.keySet = c.Flags().Changed("key")
			return a.call(c.Context(), &f, args[0], args[1:])
		}),
	}
	f.up.flags(c)
	fl := c.Flags()
	fl.StringVar(&f.session, "session", "", "the agent `SESSION` (default: MCPLEDGER_SESSION, else this shell's)")
	fl.StringVar(&f.key, "key", "", "the operation's idempotency `KEY`: 1-255 bytes of [A-Za-z0-9._:~-]")
	fl.BoolVar(&f.newKey, "new", false, "a new operation, even if the same call was made moments ago")
	fl.BoolVar(&f.yes, "yes", false, "approve a call that needs confirmation")
	fl.StringVar(&f.args, "args", "", "the arguments as one `JSON` object, or @FILE holding one")
	a.policyFlag(c, &f.policy)
	fl.DurationVar(&f.wait, "wait", 0, "when the call is queued for approval, wait up to `DURATION` for a person's decision")
	return c
}

func (a *app) call(ctx context.Context, f *callFlags, toolName string, words []string) error {
	// Everything the command line alone can get wrong is reported before
	// the ledger is opened or the server started.
	if err := f.up.check(); err != nil {
		return err
	}
	if f.keySet {
		if err := ledger.ValidateKey(f.key); err != nil {
			return exitf(exitUsage, "--key %q: %v", f.key, err)
		}
		if f.newKey {
			return exitf(exitUsage, "--key names an operation and --new asks for a new one; pass one of them")
		}
	}
	args, err := parseArguments(words, f.args)
	if err != nil {
		return err
	}
	policy, err := loadPolicy(f.policy)
	if err != nil {
		return err
	}
	if f.session == "" {
		f.session = a.defaultSession()
	}
	st, err := a.ledger(ctx, readWrite)
	if err != nil {
		return err
	}
	connect := func(ctx context.Context) (*mcp.ClientSession, error) { return f.up.connect(ctx, nil) }
	cl, err := client.Dial(ctx, connect, st, &client.Options{
		Tenant:    a.tenant,
		Session:   f.session,
		Policy:    policy,
		Confirmer: a.confirmer(f.yes),
		Requester: a.who(),
	})
	if err != nil {
		return withCode(exitUnreachable, err)
	}
	defer cl.Close()

	tools, err := listTools(ctx, cl.Session())
	if err != nil {
		return err
	}
	i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == toolName })
	if i < 0 {
		return exitf(exitUsage, "%s has no tool %q; its tools are: %s", f.up.label(), toolName, toolNames(tools))
	}
	if err := checkArguments(tools[i], args); err != nil {
		return err
	}

	switch {
	case f.keySet:
		ctx = client.WithKey(ctx, f.key)
	case f.newKey:
		ctx = client.WithNewKey(ctx)
	}
	params := &mcp.CallToolParams{Name: toolName, Arguments: args}
	out, err := cl.Call(ctx, params)
	if f.wait > 0 && errors.Is(err, client.ErrAwaitingApproval) {
		out, err = waitApproval(ctx, cl, params, f.wait, err)
	}
	if err != nil {
		return a.callError(ctx, toolName, f, err)
	}
	return a.printOutcome(toolName, out)
}

// policyFlag adds --policy FILE (env MCPLEDGER_POLICY).
func (a *app) policyFlag(c *cobra.Command, path *string) {
	c.Flags().StringVar(path, "policy", a.env("MCPLEDGER_POLICY", ""),
		"the confirmation policy `FILE` (env MCPLEDGER_POLICY; default: the built-in rules)")
}

// loadPolicy loads the policy file, or the built-in rules when path is
// empty. A malformed file stops the command: it is never read as "allow".
func loadPolicy(path string) (*confirm.Policy, error) {
	if path == "" {
		return confirm.Default(), nil
	}
	p, err := confirm.Load(path)
	if err != nil {
		return nil, exitf(exitUsage, "%v; fix the policy file or leave out --policy for the built-in rules", err)
	}
	return p, nil
}

// confirmer picks who answers a call the policy asks about: --yes approves;
// a terminal on stdin gets the form (plain prompts when ACCESSIBLE is set);
// a pipe or file on stdin gets the plain prompts, so a script or test can
// answer them; anything else (no stdin, /dev/null) leaves no one to ask and
// the client denies the call.
func (a *app) confirmer(yes bool) confirm.Confirmer {
	if yes {
		return confirm.Static{Answer: confirm.Answer{
			Decision: ledger.DecisionApproved, By: a.who() + " (--yes)", Reason: "approved with --yes",
		}}
	}
	switch stdinKind(a.io.In) {
	case stdinTerminal:
		return &confirm.Terminal{In: a.io.In, Out: a.io.Err, Accessible: a.getenv("ACCESSIBLE") != ""}
	case stdinPipe:
		return &confirm.Terminal{In: a.io.In, Out: a.io.Err, Accessible: true}
	}
	return nil
}

// callJSON is the --json shape of a call's result.
type callJSON struct {
	Tool     string              `json:"tool"`
	Key      string              `json:"key"`
	State    ledger.State        `json:"state"`
	Replayed bool                `json:"replayed"`
	FirstAt  *time.Time          `json:"firstAt,omitempty"`
	Attempts int                 `json:"attempts"`
	Result   *mcp.CallToolResult `json:"result,omitempty"`
	Error    string              `json:"error,omitempty"`
}

func (a *app) printOutcome(tool string, out *client.Outcome) error {
	state := ledger.StateSucceeded
	if out.Result != nil && out.Result.IsError {
		state = ledger.StateFailed
	}
	var first *time.Time
	attempts := out.Attempts
	if r := out.Record; r != nil {
		state = r.State
		at := r.CreatedAt.UTC()
		first = &at
		attempts = r.Attempts
	}
	if a.json {
		if err := a.printJSON(callJSON{Tool: tool, Key: out.Key, State: state, Replayed: out.Replayed,
			FirstAt: first, Attempts: attempts, Result: out.Result}); err != nil {
			return err
		}
	} else {
		if text := resultText(out.Result); text != "" {
			if isTerminal(a.io.Out) {
				text = printable(text, true)
			}
			fmt.Fprintln(a.io.Out, text)
		}
		if out.Replayed {
			when := "the ledger"
			if first != nil {
				when = first.Format(time.RFC3339)
			}
			fmt.Fprintf(a.io.Err, "replayed from %s: key %s, %s after %d attempt(s); nothing ran again (pass --new for a new operation)\n",
				when, out.Key, state, attempts)
		} else {
			fmt.Fprintf(a.io.Err, "key %s: %s after %d attempt(s)\n", out.Key, state, attempts)
		}
	}
	if out.Result != nil && out.Result.IsError {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s returned a tool error (key %s)", tool, out.Key)}
	}
	return nil
}

// callError maps a failed call to its exit code and one line naming the fix.
func (a *app) callError(ctx context.Context, tool string, f *callFlags, err error) error {
	var key string
	var state ledger.State
	if ce, ok := errors.AsType[*client.Error](err); ok {
		key, state = ce.Key, ce.State
	}
	if a.json {
		// Scripts read the key of the record to reconcile from stdout.
		if jerr := a.printJSON(callJSON{Tool: tool, Key: key, State: state, Error: oneLine(err.Error())}); jerr != nil {
			return jerr
		}
	}
	keyText := ""
	if key != "" {
		keyText = " (key " + key + ")"
	}
	switch {
	case errors.Is(err, ledger.ErrKeyReused):
		return exitf(exitUsage, "key %s was already used for %s with other arguments; nothing ran; pass another --key, or the arguments of the first call", orDash(key), tool)
	case errors.Is(err, ledger.ErrInvalidKey):
		return exitf(exitUsage, "%v", err)
	case errors.Is(err, client.ErrRejected) && errors.Is(err, confirm.ErrNoConfirmer):
		return exitf(exitUsage, "%s needs confirmation and no one could be asked%s; nothing ran; run it again on a terminal, or with --yes (the same --key works), or allow the tool in a policy file (--policy)", tool, keyText)
	case errors.Is(err, client.ErrRejected) && (errors.Is(err, context.Canceled) || ctx.Err() != nil):
		return exitf(exitInterrupted, "interrupted at the confirmation of %s%s; nothing ran and nothing final was recorded; run the same command again to be asked again", tool, keyText)
	case errors.Is(err, client.ErrRejected):
		return exitf(exitUsage, "the server refused the arguments of %s%s before it ran: %s; nothing ran; correct the arguments (see agentctl tools) and call again, the same --key may be used", tool, keyText, ledger.OneLine(rejection(err), 300))
	case errors.Is(err, client.ErrDenied), state == ledger.StateDenied:
		return a.deniedError(ctx, tool, key)
	case errors.Is(err, client.ErrAwaitingApproval):
		return a.awaitingError(tool, key, err)
	case errors.Is(err, client.ErrOutcomeUnknown), state == ledger.StateUnknown:
		return exitf(exitUnknown, "the outcome of %s%s is unknown: check at the server, then run agentctl ledger reconcile %s --as succeeded|failed", tool, keyText, orDash(key))
	case errors.Is(err, ledger.ErrInProgress), state.Waiting():
		return exitf(exitUnknown, "%s%s is still in progress elsewhere; look later with agentctl ledger show %s", tool, keyText, orDash(key))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return exitf(exitUnknown, "%s%s was interrupted and may have run: check at the server, then settle it with agentctl ledger reconcile %s --as succeeded|failed", tool, keyText, orDash(key))
	case errors.Is(err, client.ErrNotSent), state == ledger.StateRetryable, retry.Classify(err) == retry.Transient:
		return exitf(exitUnreachable, "cannot reach %s: %v; nothing ran; run the same command again once it is up", f.up.label(), err)
	}
	if state == ledger.StateFailed {
		return exitf(exitFailed, "%s failed%s and will not be retried: %v; fix the arguments (see agentctl tools) and call again", tool, keyText, errors.Unwrap(err))
	}
	return withCode(exitFailed, err)
}

// rejection is the server's own words for a refused request.
func rejection(err error) string {
	if je, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return je.Message
	}
	return err.Error()
}

// deniedError says who denied the call and why, from the ledger record, and
// how to run it after all.
func (a *app) deniedError(ctx context.Context, tool, key string) error {
	var rec *ledger.Record
	if key != "" && a.store != nil {
		r, err := a.store.Get(ctx, ledger.ID{Tenant: a.tenant, Tool: tool, Key: key})
		if err == nil {
			rec = r
		}
	}
	by, reason := "the policy", rec.ErrorMessage
	if ap := rec.Approval; ap != nil {
		by, reason = ap.By, ap.Reason
	}
	if reason == "" {
		reason = "no reason given"
	}
	return exitf(exitDenied, "%s was denied by %s (key %s): %s; nothing ran; the denial is final for this key: to run the call after all, pass --new or another --key (and check the policy file if the policy denied it)", tool, by, key, reason)
}

func toolNames(tools []*mcp.Tool) string {
	if len(tools) == 0 {
		return "none"
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

package main

import (
	"context"
	"encoding/json"
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
	"github.com/mcpledger/mcpledger/confirm/terminal"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

func init() { register(newCallCmd) }

type callFlags struct {
	up       upstream
	session  string
	key      string
	keySet   bool // --key was given, even empty: an empty key is an invalid key
	newKey   bool
	yes      bool
	args     string
	policy   string
	timeout  time.Duration
	waitFor  time.Duration // --wait-approval
	durable  string        // --durability
	progress string        // --progress
}

func newCallCmd(a *app) *cobra.Command {
	var f callFlags
	c := &cobra.Command{
		Use:   "call [--server 'CMD ARGS' | --url URL] [--session S] [--key K] [--new] [--yes] TOOL [NAME=VALUE ...] [--args JSON]",
		Short: "Call a tool once: a repeat returns the first result instead of running again",
		Long: `call calls one tool of an MCP server through the ledger.

Arguments are NAME=VALUE words, typed by the tool's input schema: a string
field takes VALUE as it is (payee=1234 is the string "1234"); an integer,
number, boolean, null, object or array field takes VALUE as that JSON
(amount_cents=1250, ok=true, meta='{"a":1}'); a VALUE that fits no type of
its field is refused before anything runs. A field without a declared type
takes VALUE as JSON when it is JSON, else as a string. --args takes a JSON
object (or @FILE holding one); NAME=VALUE words override its keys.

On a terminal, stderr shows one line saying what the call waits for and for
how long: connecting, the server's answer (with the key), another process
that runs the same operation, a person's approval, the next retry and when,
the server's progress. --progress=plain writes the same as plain lines, one
per change, for a pipe or a log; --progress=none shows nothing. Stdout holds
the result alone either way. --timeout bounds all of it: 5 minutes by
default (plus --wait-approval when given), --timeout 0 for no bound. A call
that may have reached the tool when it runs out is UNKNOWN (exit 4), with its
key; one that was never sent ran nothing.

The operation's key is --key when given. Without it, the same call (tool and
arguments) repeated in the same session within the re-planning window (10
minutes) is recognised as a re-plan and answered from the ledger; --new asks
for a new operation instead. The session is --session, else
MCPLEDGER_SESSION, else this shell's terminal session, so running the same
command twice in one terminal replays it.

A tool the policy marks sensitive (by default names with pay, send, delete,
transfer, publish ... and destructive tools) asks for confirmation on the
terminal, with plain prompts when stdin is a pipe or ACCESSIBLE is set;
--yes approves; with no one to ask nothing runs, the record is REJECTED and
the command exits 2; the same command with --yes (and the same --key) runs it.`,
		Example: `  agentctl call --server 'go run ./examples/payments' --key order-42 \
      create_payment amount_cents=1250 currency=EUR payee=acme
  agentctl call --url http://127.0.0.1:8080/mcp --args '{"id":"a1"}' lookup
  agentctl call --json --key order-42 --yes create_payment amount_cents=1250`,
		Args: usageArgs(1, -1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			if err := a.progressMode(f.progress); err != nil {
				return err
			}
			f.keySet = c.Flags().Changed("key")
			if !c.Flags().Changed("timeout") {
				f.timeout = defaultCallTimeout + f.waitFor
			}
			return a.call(c.Context(), &f, args[0], args[1:])
		}),
	}
	f.up.flags(c)
	f.up.getenv = a.getenv
	fl := c.Flags()
	fl.StringVar(&f.session, "session", "", "the agent `SESSION` (default: MCPLEDGER_SESSION, else this shell's)")
	fl.StringVar(&f.key, "key", "", "the operation's idempotency `KEY`: 1-255 bytes of [A-Za-z0-9._:~-]")
	fl.BoolVar(&f.newKey, "new", false, "a new operation, even if the same call was made moments ago")
	fl.BoolVar(&f.yes, "yes", false, "approve a call that needs confirmation")
	fl.StringVar(&f.args, "args", "", "the arguments as one `JSON` object, or @FILE holding one")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up after `DURATION` (connecting, waiting and retries included; default 5m plus --wait-approval, 0 for none); a call that may have run is then UNKNOWN (exit 4)")
	fl.DurationVar(&f.waitFor, "wait-approval", 0, "when the call is queued for approval, wait up to `DURATION` for a person's decision")
	fl.StringVar(&f.progress, "progress", progressAuto, "what stderr shows while the call waits: `MODE` auto (a status line on a terminal, else nothing), plain (a line per change) or none")
	completeWords(c, "progress", progressAuto, progressPlain, progressNone)
	a.policyFlag(c, &f.policy)
	a.durabilityFlag(c, &f.durable)
	return c
}

// defaultCallTimeout bounds a call without --timeout, so a hung upstream
// never holds a terminal forever.
const defaultCallTimeout = 5 * time.Minute

// progressMode sets the status line for --progress.
func (a *app) progressMode(mode string) error {
	switch mode {
	case progressAuto:
	case progressPlain:
		a.status.close()
		a.status = newStatus(a.io.Err, false, true, func() int { return a.termWidth(a.io.Err) })
	case progressNone:
		a.status.close()
		a.status = nil
	default:
		return exitf(exitUsage, "--progress %s: want --progress=auto (a status line on a terminal), plain (lines for a pipe) or none", shorten(mode, 40))
	}
	return nil
}

// errCallTimeout is the cause of a call's context when --timeout ran out.
var errCallTimeout = errors.New("--timeout ran out")

func (a *app) call(ctx context.Context, f *callFlags, toolName string, words []string) error {
	// Everything the command line alone can get wrong is reported before
	// the ledger is opened or the server started.
	if err := f.up.check(); err != nil {
		return err
	}
	if f.keySet {
		if err := ledger.ValidateKey(f.key); err != nil {
			return reasonf(reasonInvalidKey, "--key %s: %v", shorten(f.key, 60), err)
		}
		if f.newKey {
			return exitf(exitUsage, "--key names an operation and --new asks for a new one; pass one of them")
		}
	}
	if f.timeout < 0 {
		return exitf(exitUsage, "--timeout %s: want a positive duration such as 30s or 2m", f.timeout)
	}
	args, err := parseArguments(words, f.args)
	if err != nil {
		return err
	}
	policy, err := loadPolicy(f.policy)
	if err != nil {
		return err
	}
	durability, err := parseDurability(f.durable)
	if err != nil {
		return err
	}
	if f.session == "" {
		f.session = a.defaultSession()
	}
	runCtx := ctx
	if f.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, f.timeout, errCallTimeout)
		defer cancel()
	}
	fail := func(err error) error { return a.callError(ctx, runCtx, toolName, f, err) }
	st, err := a.ledger(runCtx, readWrite)
	if err != nil {
		return fail(err)
	}
	a.status.set("connecting to %s…", f.up.label())
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		return f.up.connect(ctx, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				a.status.progress(toolName, req.Params.Progress, req.Params.Total, req.Params.Message)
			},
		})
	}
	maxAttempts := retry.DefaultMaxAttempts
	cl, err := client.Dial(runCtx, connect, st, &client.Options{
		Tenant:     a.tenant,
		Session:    f.session,
		Policy:     policy,
		Confirmer:  a.statusConfirmer(a.confirmer(f.yes)),
		Logger:     a.logger(),
		Requester:  a.who(),
		Durability: durability,
		Peer:       f.up.peer(),
		Retry: &retry.Policy{MaxAttempts: maxAttempts, OnRetry: func(err error, next time.Duration, attempt int) {
			a.status.retrying(toolName, attempt, maxAttempts, next, retryWhy(err))
		}},
	})
	if err != nil {
		return fail(withCode(exitUnreachable, err))
	}
	defer a.closeOrWarn("the MCP session", cl.Close)

	a.status.set("listing the tools of %s…", f.up.label())
	tools, err := listTools(runCtx, cl.Session())
	if err != nil {
		return fail(err)
	}
	i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == toolName })
	if i < 0 {
		return reasonf(reasonInvalidArgument, "%s has no tool %s; its tools are: %s", f.up.label(), shorten(toolName, 60), toolNames(tools))
	}
	typed, err := args.typed(tools[i])
	if err != nil {
		return err
	}
	if err := checkArguments(tools[i], typed); err != nil {
		return err
	}

	switch {
	case f.keySet:
		runCtx = client.WithKey(runCtx, f.key)
	case f.newKey:
		runCtx = client.WithNewKey(runCtx)
	}
	params := &mcp.CallToolParams{Name: toolName, Arguments: typed}
	if a.status != nil {
		// Ask for progress notifications only where they are shown.
		params.SetProgressToken("agentctl-" + randomID())
	}
	a.callee = serverName(cl.Session(), &f.up)
	a.status.set("waiting for %s to answer %s…", a.callee, toolName)
	out, err := cl.Call(runCtx, params)
	if f.waitFor > 0 && errors.Is(err, client.ErrAwaitingApproval) {
		out, err = waitApproval(runCtx, cl, params, f.waitFor, err, a.status)
	}
	a.status.clear()
	if err != nil {
		return fail(err)
	}
	return a.printOutcome(toolName, out)
}

// retryWhy names the failure that makes the client retry, briefly.
func retryWhy(err error) string {
	if r := retry.Reason(err); r != "" {
		return r
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return shorten(oneLine(err.Error()), 60)
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
			Decision: ledger.DecisionApproved, By: a.who(), Via: "agentctl --yes", Reason: "approved with --yes",
		}}
	}
	switch stdinKind(a.io.In) {
	case stdinTerminal:
		return &terminal.Prompt{In: a.io.In, Out: a.io.Err, Accessible: a.getenv("ACCESSIBLE") != "", User: a.who()}
	case stdinPipe:
		return &terminal.Prompt{In: a.io.In, Out: a.io.Err, Accessible: true, User: a.who()}
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
}

func (a *app) printOutcome(tool string, out *client.Outcome) error {
	var fail *exitError
	if out.Result != nil && out.Result.IsError {
		fail = a.toolError(tool, out)
		if fail.reason != reasonToolError {
			// The ledger behind a proxy answered, not the tool: the error
			// says what happened, and under --json it is the one object.
			return fail
		}
		// The result is the answer; the error only sets the exit code.
		fail.printed = true
	}
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
	replayed, by := out.Replayed, "the ledger"
	// by names who replayed when it is not this ledger.
	if m, ok := serverReplay(out.Result); ok && !replayed {
		// This ledger ran the call once, and the server answered from its
		// own record: the tool did not run again.
		replayed, by = true, "the server"
		if !m.FirstAt.IsZero() {
			at := m.FirstAt.UTC()
			first = &at
		}
		if m.Attempts > 0 {
			attempts = m.Attempts
		}
	}
	if a.json {
		if err := a.printJSON(callJSON{Tool: tool, Key: out.Key, State: state, Replayed: replayed,
			FirstAt: first, Attempts: attempts, Result: out.Result}); err != nil {
			return err
		}
	} else {
		if text := resultText(out.Result); text != "" {
			if isTerminal(a.io.Out) {
				text = printable(text, true)
			}
			a.println(text)
		}
		var note string
		switch {
		case replayed:
			when := by
			if first != nil {
				when = first.Format(time.RFC3339)
				if by != "the ledger" {
					when += " by " + by
				}
			}
			note = fmt.Sprintf("replayed from %s: key %s, %s after %s; nothing ran again (pass --new for a new operation)",
				when, out.Key, state, plural(attempts, "attempt", "attempts"))
		default:
			note = fmt.Sprintf("key %s: %s after %s", out.Key, state, plural(attempts, "attempt", "attempts"))
		}
		a.eprintln(wrapIndent(note, a.proseWidth(a.io.Err), "", "  "))
	}
	if fail != nil {
		return fail
	}
	return nil
}

// toolError is the exit of an isError result: the row of the call's
// record, or of the state a proxy (agentctl proxy) named in the result's
// _meta when the ledger keeps no record of the call (a read); a proxy
// answers a call its ledger did not complete that way, and that state,
// not "the tool failed", decides the exit code.
func (a *app) toolError(tool string, out *client.Outcome) *exitError {
	key, state := out.Key, ledger.StateFailed
	if m, ok := out.Result.Meta[wire.MetaError].(map[string]any); ok {
		if s, ok := m["state"].(string); ok {
			state = ledger.State(s)
		}
		if k, ok := m["key"].(string); ok && k != "" {
			key = k
		}
	}
	if out.Record != nil {
		state = out.Record.State
	}
	row := ledger.RowOf(state)
	text := boundLine(resultText(out.Result))
	e := &exitError{reason: row.ExitReason, exit: row.Exit, fromRow: true, key: key, state: string(state)}
	switch row.ExitReason {
	case "", reasonToolError:
		// An isError result is the tool's answer: it ran and said no.
		e.reason, e.exit, e.fromRow = reasonToolError, exitFailed, false
		if key == "" {
			// A read the ledger does not keep: the next call reads again.
			e.err = fmt.Errorf("%s returned a tool error: %s", tool, text)
			break
		}
		e.err = fmt.Errorf("%s returned a tool error (key %s): %s; it ran and will not be retried with this key", tool, key, text)
	case reasonDenied:
		e.err = fmt.Errorf("%s was denied at the proxy (key %s): %s", tool, key, text)
	case reasonAwaitingApproval:
		e.err = fmt.Errorf("%s awaits approval at the proxy (key %s); approve it there, then run the same command again", tool, key)
	case reasonOutcomeUnknown:
		e.err = fmt.Errorf("the outcome of %s (key %s) is unknown at the proxy: check at the server, then reconcile it in the proxy's ledger (agentctl ledger reconcile %s --as succeeded|failed|not_run)", tool, key, key)
	case reasonInProgress:
		e.err = fmt.Errorf("%s (key %s) is still in progress behind the proxy; run the same command again later to get its result", tool, key)
	default:
		e.err = fmt.Errorf("%s did not complete at the proxy (key %s, state %s): %s", tool, key, state, text)
	}
	return e
}

// callError maps a failed call to its reason and exit code, and one line
// naming the fix. A call that left a record is answered by the row of the
// record's state (recordError); only a call that left none (nothing was
// sent) is classified by its error chain. ctx is the run's context
// (cancelled by a signal), runCtx the call's (also bounded by --timeout).
func (a *app) callError(ctx, runCtx context.Context, tool string, f *callFlags, err error) error {
	interrupted := ctx.Err() != nil
	timedOut := !interrupted && errors.Is(context.Cause(runCtx), errCallTimeout)
	if key, state, ok := callRecord(err); ok {
		// A person's Ctrl-C at the prompt ends it as a signal would.
		aborted := interrupted || errors.Is(err, confirm.ErrAborted)
		return a.recordError(ctx, tool, f, key, state, err, aborted, timedOut)
	}
	var key string
	if ce, ok := errors.AsType[*client.Error](err); ok {
		key = ce.Key
	}
	reason := callReason(err, interrupted, timedOut)
	if ee, ok := errors.AsType[*exitError](err); ok && ee.reason == reason {
		// Already explained (connecting, listing tools), unless it
		// failed because --timeout ran out or a signal came.
		switch {
		case ee.reason == reasonUnreachable && timedOut:
			reason = reasonTimeout
		case ee.reason == reasonUnreachable && interrupted:
			reason = reasonInterrupted
		case ee.reason == reasonUnreachable:
			return &exitError{reason: reasonUnreachable, err: fmt.Errorf("nothing ran: %w", ee.err)}
		default:
			return err
		}
	}
	ledgerErr := errors.Is(err, sqlite.ErrFull) || errors.Is(err, sqlite.ErrUnwritable) || errors.Is(err, sqlite.ErrNotDatabase)
	if reason == reasonFailed || reason == reasonUnreachable && ledgerErr {
		// Not UNKNOWN, so nothing may have been sent: a ledger that could
		// not record the claim is the ledger's fault, not the server's.
		if fe := ledgerFault(a.sqlitePath, err); fe != nil {
			return fe
		}
	}
	keyText := ""
	if key != "" {
		keyText = " (key " + key + ")"
	}
	e := &exitError{reason: reason, key: key}
	switch reason {
	case reasonKeyReused:
		e.err = fmt.Errorf("key %s was already used for %s with other arguments; nothing ran; pass another --key, or the arguments of the first call", orDash(key), tool)
	case reasonArgumentsTooLarge:
		e.err = fmt.Errorf("the arguments of %s are too large for the ledger: %v; nothing ran; send a reference (a URL, a file id) instead of the content", tool, err)
	case reasonNoConfirmer:
		e.err = unconfirmedError(tool, keyText, "no one could be asked")
	case reasonRejected:
		e.err = fmt.Errorf("the server refused the arguments of %s%s before it ran: %s; nothing ran; correct the arguments (see agentctl tools) and call again, the same --key may be used", tool, keyText, ledger.OneLine(rejection(err), 300))
	case reasonOutcomeUnknown:
		if errors.Is(err, context.Canceled) {
			e.err = fmt.Errorf("%s%s was interrupted and may have run: check at the server, then settle it with agentctl ledger reconcile %s --as succeeded|failed|not_run", tool, keyText, orDash(key))
			break
		}
		e.err = unknownError(tool, key, err)
	case reasonTimeout:
		e.err = fmt.Errorf("%s%s gave up after --timeout %s before the request was sent, so nothing ran; run it again with a longer --timeout once %s answers", tool, keyText, f.timeout, f.up.label())
	case reasonInterrupted:
		e.err = fmt.Errorf("%s%s was interrupted before it was sent; nothing ran; run the same command again", tool, keyText)
	case reasonInProgress:
		e.err = fmt.Errorf("%s%s is still in progress elsewhere; look later with agentctl ledger show %s", tool, keyText, orDash(key))
	case reasonUnreachable:
		e.err = fmt.Errorf("cannot reach %s: %v; nothing ran; run the same command again once it is up", f.up.label(), err)
	case reasonLedgerLocked:
		// run explains it once the client has closed: closing writes the
		// call events, which may wait for the lock too.
		return err
	default:
		e.err = err
	}
	return e
}

// recordError is the error of a call that left its record in state: the
// reason, the exit code and what the message says happened are the row's
// (ledger.RowFor); the error chain adds only its details.
func (a *app) recordError(ctx context.Context, tool string, f *callFlags, key string, state ledger.State, err error, interrupted, timedOut bool) error {
	rec := a.readRecord(ctx, tool, key)
	if rec != nil && rec.State != state {
		rec = nil // not what the call saw: the call's own word stands
	}
	row := ledger.RowFor(state, callKind(rec, err))
	reason, code := rowReason(row, interrupted, timedOut)
	fromRow := func(err error) error {
		if e, ok := errors.AsType[*exitError](err); ok {
			e.reason, e.exit, e.fromRow, e.key, e.state = reason, code, true, key, string(state)
		}
		return err
	}
	keyText := " (key " + key + ")"
	e := &exitError{}
	switch reason {
	case reasonInterrupted:
		if row.ExitReason == ledger.ExitReasonUnconfirmed {
			e.err = fmt.Errorf("interrupted at the confirmation of %s%s; nothing ran and nothing final was recorded; run the same command again to be asked again", tool, keyText)
			break
		}
		e.err = fmt.Errorf("%s%s was interrupted before it was sent; nothing ran; run the same command again", tool, keyText)
	case reasonTimeout:
		e.err = fmt.Errorf("%s%s gave up after --timeout %s before the request was sent, so nothing ran; run it again with a longer --timeout once %s answers", tool, keyText, f.timeout, f.up.label())
	case reasonAwaitingApproval:
		return fromRow(a.awaitingError(tool, key, err))
	case reasonDenied:
		return fromRow(a.deniedError(tool, key, rec))
	case reasonNoConfirmer:
		why := "no one could be asked"
		if rec != nil && rec.ErrorMessage != "" {
			why = rec.ErrorMessage
		}
		e.err = unconfirmedError(tool, keyText, why)
	case reasonRejected:
		e.err = fmt.Errorf("the server refused the arguments of %s%s before it ran: %s; nothing ran; correct the arguments (see agentctl tools) and call again, the same --key may be used", tool, keyText, ledger.OneLine(rejection(err), 300))
	case reasonOutcomeUnknown:
		e.err = unknownError(tool, key, err)
	case reasonInProgress:
		e.err = fmt.Errorf("%s%s is still in progress elsewhere; run the same command again later to get its result, or look with agentctl ledger show %s", tool, keyText, key)
	case reasonUnreachable:
		e.err = fmt.Errorf("%s%s was not sent: cannot reach %s (%s); nothing ran; run the same command again once it is up", tool, keyText, f.up.label(), ledger.OneLine(err.Error(), 200))
	case reasonToolError:
		e.err = fmt.Errorf("%s failed%s and will not be retried: %v; fix the arguments (see agentctl tools) and call again", tool, keyText, errors.Unwrap(err))
	case "":
		// It ran and succeeded; the ledger holds no result to replay
		// (reconciled without one, say).
		if rec != nil {
			return a.printOutcome(tool, &client.Outcome{Key: key, Record: rec, Replayed: true})
		}
		e.err = fmt.Errorf("%s%s succeeded, and the ledger keeps no result to show: %v; see agentctl ledger show %s", tool, keyText, err, key)
	default:
		e.err = err
	}
	return fromRow(e)
}

// readRecord is the client's record of tool and key in the ledger, or nil
// when it cannot be read. It reads on after a signal: the record says
// what the call came to.
func (a *app) readRecord(ctx context.Context, tool, key string) *ledger.Record {
	if key == "" || a.store == nil {
		return nil
	}
	rec, err := a.store.Get(context.WithoutCancel(ctx), ledger.ID{Tenant: a.tenant, Layer: ledger.LayerClient, Tool: tool, Key: key})
	if err != nil {
		return nil
	}
	return rec
}

// unconfirmedError says that no one confirmed a call (why says what the
// confirmation came to), and how to run it.
func unconfirmedError(tool, keyText, why string) error {
	// The library's words name its Go options; the CLI's flags follow.
	why = strings.ReplaceAll(why, confirm.ErrNoConfirmer.Error(), "no terminal and no elicitation-capable host to ask")
	return fmt.Errorf("%s%s needs confirmation and no one confirmed it: %s; nothing ran; answer the prompt on a terminal, or run it again with --yes (the same --key works), or allow the tool in a policy file (--policy)", tool, keyText, ledger.OneLine(why, 200))
}

// unknownError says that the call may have run, what made it unknown (in
// the client's words after its sentinel), and how to settle it.
func unknownError(tool, key string, err error) error {
	why := err.Error()
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Err != nil {
		why = ce.Err.Error()
	}
	why = strings.TrimPrefix(strings.TrimPrefix(why, client.ErrOutcomeUnknown.Error()), ": ")
	if why != "" {
		why = " (" + ledger.OneLine(why, 200) + ")"
	}
	keyText := ""
	if key != "" {
		keyText = " (key " + key + ")"
	}
	return fmt.Errorf("the outcome of %s%s is unknown%s: it may have run; run the same command again (a key-aware server answers with what happened, and runs it only if it did not), or check at the server, then run agentctl ledger reconcile %s --as succeeded|failed|not_run", tool, keyText, why, orDash(key))
}

// rejection is the server's own words for a refused request.
func rejection(err error) string {
	if je, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return schemaWords(je.Message)
	}
	return schemaWords(err.Error())
}

// upstreamDenied is the error kind of a record an upstream ledger denied.
var upstreamDenied = ledger.UpstreamKind(ledger.StateDenied)

// deniedError says who denied the call and why, from the ledger record, and
// how to run it after all.
func (a *app) deniedError(tool, key string, rec *ledger.Record) error {
	if rec == nil {
		return &exitError{reason: reasonDenied, key: key, state: string(ledger.StateDenied), err: fmt.Errorf("%s was denied (key %s); nothing ran; to run the call after all, pass --new or another --key (and check the policy file if the policy denied it)", tool, orDash(key))}
	}
	by, reason := "the policy", rec.ErrorMessage
	if ap := rec.Approval; ap != nil {
		by, reason = ap.By, ap.Reason
	}
	if rec.ErrorKind == upstreamDenied {
		// This ledger approved it; the server it was sent to (a proxy)
		// said no.
		by, reason = "the server it was sent to (denied at the proxy)", rec.ErrorMessage
	}
	if reason == "" {
		reason = "no reason given"
	}
	return &exitError{reason: reasonDenied, key: key, state: string(rec.State), err: fmt.Errorf("%s was denied by %s (key %s): %s; nothing ran; the denial is final for this key: to run the call after all, pass --new or another --key (and check the policy file if the policy denied it)", tool, by, key, shorten(reason, 200))}
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

// serverReplay reads the replay marker a key-aware server (or agentctl
// proxy) put on a result it answered from its own record.
func serverReplay(res *mcp.CallToolResult) (wire.Replay, bool) {
	if res == nil {
		return wire.Replay{}, false
	}
	v, ok := res.Meta[wire.MetaReplay]
	if !ok {
		return wire.Replay{}, false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return wire.Replay{}, false
	}
	var m wire.Replay
	if err := json.Unmarshal(raw, &m); err != nil || m.Key == "" || !m.State.Valid() {
		return wire.Replay{}, false
	}
	return m, true
}

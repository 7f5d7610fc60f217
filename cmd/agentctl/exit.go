package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
)

// Exit codes of DESIGN.md "agentctl".
// They are the ledger's (ledger.RowOf(state).Exit is the exit of a call
// that ended in state).
const (
	exitOK          = ledger.ExitOK
	exitFailed      = ledger.ExitFailed      // the tool said no (isError), or a replayed failure
	exitUsage       = ledger.ExitUsage       // bad usage or input, also arguments the server rejected before the tool ran
	exitDenied      = ledger.ExitDenied      // a person or the policy refused the call
	exitUnknown     = ledger.ExitUnknown     // the outcome is unknown or still in progress: reconcile or look later
	exitUnreachable = ledger.ExitUnreachable // the upstream server or the ledger could not be reached; nothing was sent
	exitAwaiting    = ledger.ExitAwaiting    // the call awaits a person's approval
	exitInterrupted = ledger.ExitInterrupted // interrupted (Ctrl-C, SIGTERM) with nothing final recorded
)

// The reasons of --json errors: one list, each with its exit code. A
// script branches on the reason; the exit code groups reasons for a shell.
// A call that left a record takes its reason and exit code from the row of
// the record's state (ledger.RowFor); the others name what failed before
// a record was written, when nothing was sent.
const (
	reasonFailed            = "failed"                     // an error with no better reason
	reasonToolError         = ledger.ExitReasonToolError   // the tool ran and returned isError (FAILED)
	reasonUsage             = "usage"                      // the command line is wrong
	reasonInvalidArgument   = "invalid_argument"           // an argument does not fit the tool's schema
	reasonInvalidKey        = "invalid_key"                // --key breaks the key rules
	reasonKeyReused         = "key_reused"                 // the key is bound to other arguments
	reasonArgumentsTooLarge = "arguments_too_large"        // the arguments exceed the ledger's limit
	reasonRejected          = ledger.ExitReasonRejected    // REJECTED: the server refused the arguments before the tool ran
	reasonLedgerInvalid     = "ledger_invalid"             // --ledger names no usable ledger
	reasonDenied            = ledger.ExitReasonDenied      // DENIED: a person or the policy said no
	reasonNoConfirmer       = ledger.ExitReasonUnconfirmed // REJECTED: the call needs confirmation and no one confirmed it
	reasonOutcomeUnknown    = ledger.ExitReasonUnknown     // UNKNOWN: the call may have run: reconcile it
	reasonInProgress        = ledger.ExitReasonInProgress  // another process or the server runs the same operation
	reasonTimeout           = "timeout"                    // --timeout ran out before the request was sent
	reasonUnreachable       = ledger.ExitReasonNotSent     // the MCP server cannot be reached; nothing was sent, nothing ran
	reasonLedgerUnreachable = "ledger_unreachable"         // the ledger database cannot be reached
	reasonLedgerLocked      = "ledger_locked"              // another process holds the ledger's write lock
	reasonAwaitingApproval  = ledger.ExitReasonAwaiting    // PENDING_APPROVAL: a person must approve the call first
	reasonInterrupted       = "interrupted"                // Ctrl-C or SIGTERM; nothing final recorded
)

// reasonExit maps every reason to its exit code.
var reasonExit = map[string]int{
	reasonFailed:            exitFailed,
	reasonToolError:         exitFailed,
	reasonUsage:             exitUsage,
	reasonInvalidArgument:   exitUsage,
	reasonInvalidKey:        exitUsage,
	reasonKeyReused:         exitUsage,
	reasonArgumentsTooLarge: exitUsage,
	reasonRejected:          exitUsage,
	reasonLedgerInvalid:     exitUsage,
	reasonDenied:            exitDenied,
	reasonNoConfirmer:       exitUsage, // REJECTED: no answer is not a denial
	reasonOutcomeUnknown:    exitUnknown,
	reasonInProgress:        exitUnknown,
	reasonTimeout:           exitUnreachable,
	reasonUnreachable:       exitUnreachable,
	reasonLedgerUnreachable: exitUnreachable,
	reasonLedgerLocked:      exitUnreachable,
	reasonAwaitingApproval:  exitAwaiting,
	reasonInterrupted:       exitInterrupted,
}

// The reason of every state's row is one of the CLI's reasons, with the
// row's exit code: a state the ledger adds needs no line here. A reason
// listed above keeps its code; TestRowReasonsAreCLIReasons checks that
// the two agree.
func init() {
	for _, row := range ledger.Rows() {
		if _, ok := reasonExit[row.ExitReason]; !ok && row.ExitReason != "" {
			reasonExit[row.ExitReason] = row.Exit
		}
	}
}

// codeReason is the reason of an error made with exitf, which names only a
// code.
var codeReason = map[int]string{
	exitFailed:      reasonFailed,
	exitUsage:       reasonUsage,
	exitDenied:      reasonDenied,
	exitUnknown:     reasonOutcomeUnknown,
	exitUnreachable: reasonUnreachable,
	exitAwaiting:    reasonAwaitingApproval,
	exitInterrupted: reasonInterrupted,
}

// exitError ends a run: its reason gives the exit code, and its message is
// the one line printed on stderr, naming the fix. Key and state name the
// record concerned, when there is one.
type exitError struct {
	reason     string
	err        error
	key, state string
	// exit is the code when fromRow: the row of the record's state gave
	// it, not the reason.
	exit    int
	fromRow bool
	// printed: the command already printed its result under --json, so
	// no error object follows it.
	printed bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func (e *exitError) code() int {
	if e.fromRow {
		return e.exit
	}
	if c, ok := reasonExit[e.reason]; ok {
		return c
	}
	return exitFailed
}

// exitf returns an error that ends the run with code.
func exitf(code int, format string, args ...any) error {
	reason, ok := codeReason[code]
	if !ok {
		reason = reasonFailed
	}
	return &exitError{reason: reason, err: fmt.Errorf(format, args...)}
}

// reasonf returns an error that ends the run with reason's exit code.
func reasonf(reason string, format string, args ...any) error {
	return &exitError{reason: reason, err: fmt.Errorf(format, args...)}
}

// withCode attaches code to err unless err already carries an exit code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*exitError](err); ok {
		return err
	}
	reason, ok := codeReason[code]
	if !ok {
		reason = reasonFailed
	}
	return &exitError{reason: reason, err: err}
}

// exitCode is the exit code of an error a command returned; cobra's own
// errors (unknown command, flag or argument count) are usage errors.
func exitCode(err error) (int, string) {
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code(), e.reason
	}
	return exitUsage, reasonUsage
}

// callReason classifies the error of a tool call that left no record (or
// of the ledger under it) by what a person does next: nothing was sent.
// A call that left a record is classified by the record's row instead
// (rowReason). interrupted says the run's context was cancelled by a
// signal and timedOut that --timeout ran out.
func callReason(err error, interrupted, timedOut bool) string {
	if errors.Is(err, client.ErrOutcomeUnknown) {
		// The truth rule first: once the request may have reached the
		// tool, whatever failed after it (a reconnect, a ledger locked,
		// full or gone) makes the outcome unknown, never "nothing was
		// sent".
		return reasonOutcomeUnknown
	}
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.reason
	}
	switch {
	case errors.Is(err, ledger.ErrKeyReused):
		return reasonKeyReused
	case errors.Is(err, ledger.ErrInvalidKey):
		return reasonInvalidKey
	case errors.Is(err, client.ErrArgumentsTooLarge):
		return reasonArgumentsTooLarge
	case errors.Is(err, codec.ErrNoKey):
		return reasonUsage // the ledger key file is missing from the command line
	case errors.Is(err, sqlite.ErrBusy):
		return reasonLedgerLocked
	case errors.Is(err, confirm.ErrNoConfirmer):
		return reasonNoConfirmer
	case errors.Is(err, ledger.ErrInProgress), retry.Reason(err) == ledger.ReasonInProgress:
		return reasonInProgress
	case timedOut:
		return reasonTimeout
	case interrupted:
		return reasonInterrupted
	case beforeTool(err):
		return reasonRejected
	case errors.Is(err, client.ErrNotSent), retry.Classify(err) == retry.Transient:
		return reasonUnreachable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return reasonOutcomeUnknown
	}
	return reasonFailed
}

// rowReason is the reason and exit code of a call whose record is in
// row's state: the row's own, except where the row says nothing ran and
// the key may be claimed again (REJECTED, RETRYABLE), so the signal
// codes of DESIGN hold: a signal or an aborted prompt is 130
// (interrupted), and --timeout running out before the send is the timeout
// reason (with the row's exit).
func rowReason(row ledger.Row, interrupted, timedOut bool) (string, int) {
	nothingRan := row.Ran == ledger.RanNo && row.Act == ledger.ActReclaim
	switch {
	case interrupted && nothingRan:
		return reasonInterrupted, exitInterrupted
	case timedOut && nothingRan && row.Exit == exitUnreachable:
		return reasonTimeout, row.Exit
	}
	return row.ExitReason, row.Exit
}

// callRecord names the record a failed call left, from the client's
// error: its key and state. A key bound to other arguments names the
// first call's record, which this call did not touch: no record of its
// own.
func callRecord(err error) (key string, state ledger.State, ok bool) {
	ce, ok := errors.AsType[*client.Error](err)
	if !ok || ce.State == "" || errors.Is(err, ledger.ErrKeyReused) {
		return "", "", false
	}
	return ce.Key, ce.State, true
}

// callKind says why a call ended in its record's state, for
// ledger.RowFor: an upstream's hold for approval when the client says so,
// the server's "in progress" when that was its last answer, else
// the record's error kind, or no answer when the confirmation said so and
// the record could not be read.
func callKind(rec *ledger.Record, err error) string {
	kind := ""
	if rec != nil {
		kind = rec.ErrorKind
	}
	switch {
	case errors.Is(err, client.ErrAwaitingApproval):
		// Of a RETRYABLE record: the upstream holds it for a person (and
		// answered -31002 in_progress, which says no more).
		return ledger.UpstreamKind(ledger.StatePendingApproval)
	case retry.Reason(err) == ledger.ReasonInProgress:
		return ledger.ReasonInProgress
	case kind == "" && (errors.Is(err, confirm.ErrNoConfirmer) || errors.Is(err, confirm.ErrNoAnswer) || errors.Is(err, confirm.ErrAborted)):
		return ledger.KindNoAnswer
	}
	return kind
}

// beforeTool reports a protocol error by which the server refused the
// request before its tool ran: invalid params (a schema mismatch, an
// unknown tool) or a missing or invalid key.
func beforeTool(err error) bool {
	je, ok := errors.AsType[*jsonrpc.Error](err)
	if !ok {
		return false
	}
	return je.Code == jsonrpc.CodeInvalidParams || je.Code == ledger.CodeKeyRequired
}

// maxErrorLine bounds the error line: a message quoting a server's error
// or an argument must not flood the terminal or a log.
const maxErrorLine = 600

// boundLine folds s into one line and shortens it to maxErrorLine bytes,
// keeping its start (what happened) and its end (the fix).
func boundLine(s string) string {
	s = oneLine(s)
	if len(s) <= maxErrorLine {
		return s
	}
	head, tail := maxErrorLine*2/3, maxErrorLine/3-40
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s … (%d bytes cut) … %s", s[:head], start-head, s[start:])
}

// shorten quotes a value for a message, cut to n runes.
func shorten(v string, n int) string {
	r := []rune(v)
	if len(r) <= n {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q… (%d bytes)", string(r[:n]), len(v))
}

// errorJSON is the --json shape of an error: one object on stdout.
type errorJSON struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Key     string `json:"key,omitempty"`
	State   string `json:"state,omitempty"`
	Exit    int    `json:"exit"`
}

// closeOrWarn runs close at the end of a command whose result is already
// decided, and warns on stderr when it fails: what a failed close loses
// (call events still queued, a child server's exit status) is not the
// command's result, so the exit code stays the result's.
func (a *app) closeOrWarn(what string, close func() error) {
	if err := close(); err != nil {
		a.status.clear()
		a.eprintf("agentctl: warning: closing %s failed: %s; the command's result stands\n", what, boundLine(postgres.MaskDSN(redact.Text(err.Error()))))
	}
}

// report prints err: one bounded line on stderr, and under --json one
// error object on stdout. It returns the exit code.
func (a *app) report(err error) int {
	code, reason := exitCode(err)
	if errors.Is(err, codec.ErrNoKey) {
		code, reason = exitUsage, reasonUsage // the key file is missing from the command line
	}
	// An error may quote a URL, a header or a tool's text: no secret in it
	// reaches the console.
	msg := boundLine(postgres.MaskDSN(redact.Text(err.Error())))
	e, _ := errors.AsType[*exitError](err)
	if a.json && (e == nil || !e.printed) {
		body := errorBody{Reason: reason, Message: msg, Exit: code}
		if e != nil {
			body.Key, body.State = e.key, e.state
		}
		if jerr := a.printJSON(errorJSON{Error: body}); jerr != nil {
			a.eprintf("agentctl: writing the JSON error: %v\n", jerr)
		}
	}
	a.status.clear()
	a.eprintf("agentctl: %s\n", strings.TrimPrefix(msg, "agentctl: "))
	return code
}

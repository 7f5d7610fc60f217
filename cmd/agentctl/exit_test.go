package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

// A call that left no record is classified by its error chain: nothing
// was sent, except where the chain itself says the outcome is unknown.
func TestCallReason(t *testing.T) {
	inProgress := client.Neutral(server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "busy", time.Second))
	tests := []struct {
		name        string
		err         error
		interrupted bool
		timedOut    bool
		want        string
		code        int
	}{
		{"key reused", &client.Error{Tool: "pay", Key: "k", State: ledger.StateSucceeded, Err: ledger.ErrKeyReused}, false, false, reasonKeyReused, exitUsage},
		{"invalid key", ledger.ErrInvalidKey, false, false, reasonInvalidKey, exitUsage},
		{"arguments too large", fmt.Errorf("%w: 2 MiB", client.ErrArgumentsTooLarge), false, false, reasonArgumentsTooLarge, exitUsage},
		{"invalid params before the tool", client.Neutral(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "payee: want string"}), false, false, reasonRejected, exitUsage},
		{"no one to confirm", confirm.ErrNoConfirmer, false, false, reasonNoConfirmer, exitUsage},
		{"in progress at the server", fmt.Errorf("%w: %w", client.ErrNotSent, inProgress), false, false, reasonInProgress, exitUnknown},
		{"timeout before send", context.DeadlineExceeded, false, true, reasonTimeout, exitUnreachable},
		{"not sent", fmt.Errorf("%w: refused", client.ErrNotSent), false, false, reasonUnreachable, exitUnreachable},
		{"cannot connect", exitf(exitUnreachable, "cannot reach the MCP server"), false, false, reasonUnreachable, exitUnreachable},
		{"unknown, whatever a reconnect said", fmt.Errorf("%w: %w", client.ErrOutcomeUnknown, exitf(exitUnreachable, "cannot reach the MCP server")), false, false, reasonOutcomeUnknown, exitUnknown},
		{"ledger locked", fmt.Errorf("claim: %w", sqlite.ErrBusy), false, false, reasonLedgerLocked, exitUnreachable},
		{"interrupted before send", context.Canceled, true, false, reasonInterrupted, exitInterrupted},
		{"already classified", reasonf(reasonInvalidArgument, "x"), false, false, reasonInvalidArgument, exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, s, ok := callRecord(tc.err); ok {
				t.Fatalf("callRecord(%v) names a record in %s; want none", tc.err, s)
			}
			got := callReason(tc.err, tc.interrupted, tc.timedOut)
			if got != tc.want {
				t.Errorf("callReason(%v) = %s; want %s", tc.err, got, tc.want)
			}
			if code := (&exitError{reason: got}).code(); code != tc.code {
				t.Errorf("exit code of %s = %d; want %d", got, code, tc.code)
			}
		})
	}
}

// A call that left a record is answered by the row of the record's state,
// whatever else its error chain holds: a reconnect refused after the
// send does not make an UNKNOWN call "nothing was sent".
func TestRecordReason(t *testing.T) {
	inProgress := client.Neutral(server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "busy", time.Second))
	refusedReconnect := exitf(exitUnreachable, "cannot reach the MCP server at http://127.0.0.1:1/mcp")
	clientErr := func(err error, state ledger.State) error {
		return &client.Error{Tool: "pay", Key: "k", State: state, Err: err}
	}
	noAnswer := func(why error) error {
		return clientErr(fmt.Errorf("%w: no one confirmed the call: %w", client.ErrRejected, why), ledger.StateRejected)
	}
	tests := []struct {
		name        string
		err         error
		interrupted bool
		timedOut    bool
		want        string
		code        int
	}{
		{"unknown after a refused reconnect", clientErr(fmt.Errorf("%w: reconnect: %w", client.ErrOutcomeUnknown, refusedReconnect), ledger.StateUnknown), false, false, reasonOutcomeUnknown, exitUnknown},
		{"unknown, the chain says not sent", clientErr(fmt.Errorf("%w: refused", client.ErrNotSent), ledger.StateUnknown), false, false, reasonOutcomeUnknown, exitUnknown},
		{"unknown, interrupted after send", clientErr(context.Canceled, ledger.StateUnknown), true, false, reasonOutcomeUnknown, exitUnknown},
		{"unknown, timed out after send", clientErr(client.ErrOutcomeUnknown, ledger.StateUnknown), false, true, reasonOutcomeUnknown, exitUnknown},
		{"the server refused the arguments", clientErr(client.Neutral(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "payee: want string"}), ledger.StateRejected), false, false, reasonRejected, exitUsage},
		{"no one to confirm", noAnswer(confirm.ErrNoConfirmer), false, false, reasonNoConfirmer, exitUsage},
		{"no valid answer on a pipe", noAnswer(confirm.ErrNoAnswer), false, false, reasonNoConfirmer, exitUsage},
		{"Ctrl-C at the prompt", noAnswer(confirm.ErrAborted), true, false, reasonInterrupted, exitInterrupted},
		{"denied", clientErr(client.ErrDenied, ledger.StateDenied), false, false, reasonDenied, exitDenied},
		{"in progress in the ledger", clientErr(ledger.ErrInProgress, ledger.StateProcessing), false, false, reasonInProgress, exitUnknown},
		{"timeout while another process runs it", clientErr(context.DeadlineExceeded, ledger.StateProcessing), false, true, reasonInProgress, exitUnknown},
		{"interrupted while another process runs it", clientErr(context.Canceled, ledger.StateProcessing), true, false, reasonInProgress, exitUnknown},
		{"in progress at the server", clientErr(fmt.Errorf("%w: %w", client.ErrNotSent, inProgress), ledger.StateRetryable), false, false, reasonInProgress, exitUnknown},
		{"not sent", clientErr(fmt.Errorf("%w: refused", client.ErrNotSent), ledger.StateRetryable), false, false, reasonUnreachable, exitUnreachable},
		{"not sent, timed out", clientErr(fmt.Errorf("%w: refused", client.ErrNotSent), ledger.StateRetryable), false, true, reasonTimeout, exitUnreachable},
		{"not sent, interrupted", clientErr(fmt.Errorf("%w: refused", client.ErrNotSent), ledger.StateRetryable), true, false, reasonInterrupted, exitInterrupted},
		{"awaiting approval", clientErr(client.ErrAwaitingApproval, ledger.StatePendingApproval), false, false, reasonAwaitingApproval, exitAwaiting},
		{"awaiting approval at a proxy", clientErr(fmt.Errorf("%w %w", client.ErrAwaitingApproval, &client.UpstreamApproval{Key: "up"}), ledger.StateRetryable), false, false, reasonAwaitingApproval, exitAwaiting},
		{"awaiting approval, interrupted", clientErr(client.ErrAwaitingApproval, ledger.StatePendingApproval), true, false, reasonAwaitingApproval, exitAwaiting},
		{"failed without a result", clientErr(errors.New("ended as FAILED without a stored result"), ledger.StateFailed), false, false, reasonToolError, exitFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, state, ok := callRecord(tc.err)
			if !ok || key != "k" {
				t.Fatalf("callRecord(%v) = %q, %s, %v; want the record of k", tc.err, key, state, ok)
			}
			reason, code := rowReason(ledger.RowFor(state, callKind(nil, tc.err)), tc.interrupted, tc.timedOut)
			if reason != tc.want || code != tc.code {
				t.Errorf("a call that left %s with %v: reason %s, exit %d; want %s, %d", state, tc.err, reason, code, tc.want, tc.code)
			}
		})
	}
}

// Every reason has an exit code of DESIGN's list, and every code a reason.
func TestReasonsCoverTheExitCodes(t *testing.T) {
	codes := map[int]bool{}
	for reason, code := range reasonExit {
		switch code {
		case exitFailed, exitUsage, exitDenied, exitUnknown, exitUnreachable, exitAwaiting, exitInterrupted:
			codes[code] = true
		default:
			t.Errorf("reason %s has exit code %d, which DESIGN does not list", reason, code)
		}
	}
	for code, reason := range codeReason {
		if reasonExit[reason] != code {
			t.Errorf("exitf(%d) gives reason %s, whose exit code is %d", code, reason, reasonExit[reason])
		}
	}
	if len(codes) != 7 {
		t.Errorf("the reasons reach exit codes %v; want all seven error codes", codes)
	}
}

func TestBoundLine(t *testing.T) {
	long := "the server said: " + strings.Repeat("é", 300_000) + "; fix the arguments"
	got := boundLine(long)
	if len(got) > maxErrorLine+40 {
		t.Errorf("boundLine of %d bytes = %d bytes; want at most about %d", len(long), len(got), maxErrorLine)
	}
	if !strings.HasPrefix(got, "the server said: ") || !strings.HasSuffix(got, "; fix the arguments") || !strings.Contains(got, "bytes cut") {
		t.Errorf("boundLine kept %q; want the start, the fix at the end, and the cut said", got)
	}
	if !strings.Contains(got, "é") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("boundLine cut a character in two: %q", got)
	}
	if short := "a short line"; boundLine(short) != short {
		t.Errorf("boundLine(%q) = %q; want it unchanged", short, boundLine(short))
	}
}

// A proxy answers a call its ledger did not complete with an error result
// whose _meta names the record's state: that state sets the exit code.
func TestToolErrorFromAProxy(t *testing.T) {
	result := func(meta mcp.Meta) *client.Outcome {
		return &client.Outcome{Key: "k-1", Result: &mcp.CallToolResult{IsError: true, Meta: meta,
			Content: []mcp.Content{&mcp.TextContent{Text: "The call did not complete."}}}}
	}
	state := func(s ledger.State) mcp.Meta {
		return mcp.Meta{wire.MetaError: map[string]any{"key": "k-1", "state": string(s)}}
	}
	tests := []struct {
		name string
		out  *client.Outcome
		want string
		code int
	}{
		{"the tool's own error", result(nil), reasonToolError, exitFailed},
		{"denied", result(state(ledger.StateDenied)), reasonDenied, exitDenied},
		{"unknown", result(state(ledger.StateUnknown)), reasonOutcomeUnknown, exitUnknown},
		{"in progress", result(state(ledger.StateProcessing)), reasonInProgress, exitUnknown},
		{"awaiting approval", result(state(ledger.StatePendingApproval)), reasonAwaitingApproval, exitAwaiting},
		{"not sent", result(state(ledger.StateRetryable)), reasonUnreachable, exitUnreachable},
		{"failed", result(state(ledger.StateFailed)), reasonToolError, exitFailed},
	}
	a := &app{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := a.toolError("create_payment", tc.out)
			if e.reason != tc.want || e.code() != tc.code || e.key != "k-1" {
				t.Errorf("toolError = reason %s, exit %d, key %q; want %s, %d, k-1", e.reason, e.code(), e.key, tc.want, tc.code)
			}
		})
	}
}

// The reason of a state's row is one of the CLI's reasons, with the same
// exit code, so an error made by reason and one made by row agree.
func TestRowReasonsAreCLIReasons(t *testing.T) {
	rows := ledger.Rows()
	rows = append(rows, ledger.RowFor(ledger.StateRejected, ledger.KindNoAnswer), ledger.RowFor(ledger.StateRetryable, ledger.ReasonInProgress))
	for _, row := range rows {
		if row.Exit == exitOK {
			continue
		}
		if code, ok := reasonExit[row.ExitReason]; !ok || code != row.Exit {
			t.Errorf("the row of %s gives reason %q, exit %d; the CLI's reasons give it exit %d (known: %v)", row.State, row.ExitReason, row.Exit, code, ok)
		}
	}
}

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
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

func TestCallReason(t *testing.T) {
	inProgress := client.Neutral(server.Error(retry.CodeInProgress, retry.ReasonInProgress, "busy", time.Second))
	clientErr := func(err error, state ledger.State) error {
		return &client.Error{Tool: "pay", Key: "k", State: state, Err: err}
	}
	tests := []struct {
		name        string
		err         error
		state       ledger.State
		interrupted bool
		timedOut    bool
		want        string
		code        int
	}{
		{"key reused", clientErr(ledger.ErrKeyReused, ledger.StateSucceeded), ledger.StateSucceeded, false, false, reasonKeyReused, exitUsage},
		{"invalid key", ledger.ErrInvalidKey, "", false, false, reasonInvalidKey, exitUsage},
		{"arguments too large", fmt.Errorf("%w: 2 MiB", client.ErrArgumentsTooLarge), "", false, false, reasonArgumentsTooLarge, exitUsage},
		{"invalid params before the tool", clientErr(client.Neutral(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "payee: want string"}), ledger.StateFailed), ledger.StateFailed, false, false, reasonRejected, exitUsage},
		{"REJECTED", clientErr(errors.New("refused"), ledger.StateRejected), ledger.StateRejected, false, false, reasonRejected, exitUsage},
		{"no one to confirm", confirm.ErrNoConfirmer, "", false, false, reasonNoConfirmer, exitUsage},
		{"no one to confirm, as the client says it", clientErr(fmt.Errorf("%w: no one confirmed the call: %w", client.ErrRejected, confirm.ErrNoConfirmer), ledger.StateRejected), ledger.StateRejected, false, false, reasonNoConfirmer, exitUsage},
		{"Ctrl-C at the prompt", clientErr(fmt.Errorf("%w: no one confirmed the call: %w", client.ErrRejected, confirm.ErrAborted), ledger.StateRejected), ledger.StateRejected, false, false, reasonInterrupted, exitInterrupted},
		{"denied", clientErr(client.ErrDenied, ledger.StateDenied), ledger.StateDenied, false, false, reasonDenied, exitDenied},
		{"unknown", clientErr(client.ErrOutcomeUnknown, ledger.StateUnknown), ledger.StateUnknown, false, false, reasonOutcomeUnknown, exitUnknown},
		{"interrupted after send", clientErr(context.Canceled, ledger.StateUnknown), ledger.StateUnknown, true, false, reasonOutcomeUnknown, exitUnknown},
		{"in progress in the ledger", clientErr(ledger.ErrInProgress, ledger.StateProcessing), ledger.StateProcessing, false, false, reasonInProgress, exitUnknown},
		{"in progress at the server", clientErr(fmt.Errorf("%w: %w", client.ErrNotSent, inProgress), ledger.StateRetryable), ledger.StateRetryable, false, false, reasonInProgress, exitUnknown},
		{"timeout before send", context.DeadlineExceeded, "", false, true, reasonTimeout, exitUnreachable},
		{"timeout while another process runs it", clientErr(ledger.ErrInProgress, ledger.StateProcessing), ledger.StateProcessing, false, true, reasonInProgress, exitUnknown},
		{"timeout after send", clientErr(client.ErrOutcomeUnknown, ledger.StateUnknown), ledger.StateUnknown, false, true, reasonOutcomeUnknown, exitUnknown},
		{"not sent", clientErr(fmt.Errorf("%w: refused", client.ErrNotSent), ledger.StateRetryable), ledger.StateRetryable, false, false, reasonUnreachable, exitUnreachable},
		{"ledger locked", fmt.Errorf("claim: %w", sqlite.ErrBusy), "", false, false, reasonLedgerLocked, exitUnreachable},
		{"awaiting approval", clientErr(ledger.ErrInProgress, ledger.StatePendingApproval), ledger.StatePendingApproval, false, false, reasonAwaitingApproval, exitAwaiting},
		{"interrupted before send", context.Canceled, "", true, false, reasonInterrupted, exitInterrupted},
		{"failed", clientErr(errors.New("boom"), ledger.StateFailed), ledger.StateFailed, false, false, reasonFailed, exitFailed},
		{"already classified", reasonf(reasonInvalidArgument, "x"), "", false, false, reasonInvalidArgument, exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := callReason(tc.err, tc.state, tc.interrupted, tc.timedOut)
			if got != tc.want {
				t.Errorf("callReason(%v, %q) = %s; want %s", tc.err, tc.state, got, tc.want)
			}
			if code := (&exitError{reason: got}).code(); code != tc.code {
				t.Errorf("exit code of %s = %d; want %d", got, code, tc.code)
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

// The exit code of a call that ended in a state is the ledger's row for
// that state: the CLI's reasons only name it, so the two cannot drift.
func TestStateReasonsAgreeWithTheRows(t *testing.T) {
	for _, row := range ledger.Rows() {
		if row.State == ledger.StateSucceeded {
			if r := stateReason(row.State); r != "" {
				t.Errorf("stateReason(SUCCEEDED) = %s; want none (a result, not an error)", r)
			}
			continue
		}
		if r := stateReason(row.State); r != "" && reasonExit[r] != row.Exit {
			t.Errorf("an upstream's %s answer has reason %s, exit %d; the ledger's row says exit %d", row.State, r, reasonExit[r], row.Exit)
		}
		if row.State != ledger.StateFailed && stateReason(row.State) == "" {
			t.Errorf("an upstream's %s answer has no reason; want the row's exit %d", row.State, row.Exit)
		}
		r := callReason(errors.New("the call ended"), row.State, false, false)
		if reasonExit[r] != row.Exit {
			t.Errorf("a call that ended %s has reason %s, exit %d; the ledger's row says exit %d", row.State, r, reasonExit[r], row.Exit)
		}
	}
}

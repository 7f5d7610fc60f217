package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// Refusal is a server's JSON-RPC error answer to a tools/call, before or
// instead of running the tool: the -3100x errors of the wire conventions
// and -32602. Each SDK adapter turns it into its SDK's error value.
type Refusal struct {
	Code    int64
	Message string
	// Data is the error's data member (nil for -32602).
	Data *wire.ErrorData
	// row is the state whose row answered (RefuseAs); "" when the
	// refusal is not a state's answer (key reused, key invalid, stale
	// fence, invalid arguments).
	row ledger.State
}

func (r *Refusal) Error() string { return r.Message }

// Refuse builds one of the -3100x refusals. The key is echoed back (it is
// the caller's own value and holds no secret by the key rules) so a client
// can tell which operation the error is about.
func Refuse(code int64, reason, key, state, msg string, retryAfter time.Duration) *Refusal {
	return &Refusal{Code: code, Message: msg, Data: &wire.ErrorData{
		Reason: reason, Key: key, State: state, RetryAfterMs: wire.RetryAfterMs(retryAfter),
	}}
}

// InvalidParams is the -32602 refusal.
func InvalidParams(msg string) *Refusal {
	return &Refusal{Code: -32602, Message: msg}
}

// KeyRefusal answers a request whose key KeyOf or FenceOf refused.
func KeyRefusal(tool, key string, err error) *Refusal {
	reason := ledger.ReasonKeyInvalid
	if errors.Is(err, wire.ErrKeyRequired) {
		reason = ledger.ReasonKeyRequired
	}
	return Refuse(ledger.CodeKeyRequired, reason, key, "", fmt.Sprintf("tool %q: %v; %s", tool, err, wire.KeyHelp), 0)
}

// StaleFence answers a request whose fence is lower than one already seen
// for its key.
func StaleFence(tool, key string, fence, seen int64) *Refusal {
	return Refuse(ledger.CodeInProgress, ledger.ReasonStaleFence, key, "",
		fmt.Sprintf("tool %q: fence %d of this request is stale; key is at fence %d, a newer owner holds it (do not resend; ask the ledger for the outcome)", tool, fence, seen), 0)
}

// Unknown answers the request whose handler ended without an outcome
// (why: "the handler panicked", ...): the record is UNKNOWN.
func Unknown(tool, key, why string) *Refusal {
	return RefuseAs(ledger.RowOf(ledger.StateUnknown), key, string(ledger.StateUnknown),
		fmt.Sprintf("tool %q: %s; the outcome is unknown and the call will not run again until it is reconciled", tool, why), 0)
}

// Repeat says how a server answers a request that did not run the tool,
// from what ledger.Lifecycle.Do returned for it: nil to replay the record,
// else the error to answer with (a *Refusal, ctx's error, or a ledger
// failure).
func Repeat(ctx context.Context, id ledger.ID, rec *ledger.Record, err error, retryAfter time.Duration) error {
	tool, key := id.Tool, id.Key
	switch {
	case errors.Is(err, ledger.ErrKeyReused):
		return Refuse(ledger.CodeKeyReused, ledger.ReasonKeyReused, key, stateOf(rec),
			fmt.Sprintf("tool %q: idempotency key was first used with other arguments; nothing was run (use a new key for a different request)", tool), 0)
	case errors.Is(err, ledger.ErrInProgress):
		// The key is held by a running request: PROCESSING's answer,
		// whatever the record's own state.
		return RefuseAs(ledger.RowOf(ledger.StateProcessing), key, stateOf(rec),
			fmt.Sprintf("tool %q: an earlier request with this key is still running; retry with the same key", tool), retryAfter)
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("guard: %q: %w", tool, err)
	}
	switch ledger.Act(rec) {
	case ledger.ActReplay, ledger.ActDenied:
		return nil
	case ledger.ActReconcile:
		if rec.Tombstone {
			// An expired record is read as UNKNOWN (ledger.Act).
			return RefuseAs(ledger.RowOf(ledger.StateUnknown), key, string(rec.State),
				fmt.Sprintf("tool %q: this key was used before and its record has expired; reconcile it before reusing the key", tool), 0)
		}
		why := "its earlier execution may or may not have taken effect"
		if rec.ErrorKind != "" {
			why += " (" + rec.ErrorKind + ")"
		}
		return RefuseAs(ledger.RowOf(rec.State), key, string(rec.State),
			fmt.Sprintf("tool %q: %s; it will not run again until the operation is reconciled", tool, why), 0)
	}
	// Waiting (PROCESSING, PENDING_APPROVAL), or reclaimed by another
	// request first: the key is held, PROCESSING's answer.
	return RefuseAs(ledger.RowOf(ledger.StateProcessing), key, stateOf(rec),
		fmt.Sprintf("tool %q: operation is being retried by other requests; try again", tool), retryAfter)
}

// RefuseAs is the refusal a key-aware server answers with for a call in
// row's state: the row's JSON-RPC code and data.reason (ledger.Row), so
// no answer words a state's code on its own. state is data.state.
func RefuseAs(row ledger.Row, key, state, msg string, retryAfter time.Duration) *Refusal {
	r := Refuse(row.Code, row.Reason, key, state, msg, retryAfter)
	r.row = row.State
	return r
}

func stateOf(r *ledger.Record) string {
	if r == nil {
		return ""
	}
	return string(r.State)
}

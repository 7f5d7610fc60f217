package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// What a person decides about records, from any process: the CLI
// (agentctl ledger approve, deny, reconcile) and the web console call the
// same two functions.

// Decision is a person's answer to a queued call, given from any process.
type Decision struct {
	// Approve, else deny (a denial needs a Reason).
	Approve bool
	// ForSession also approves later calls of the same tool in the
	// record's session (tenant, session, tool) until Expires, while the
	// policy keeps its version.
	ForSession bool
	// By is who decides (a verified identity: the OS account, the name
	// of a console approver's token); Via is where ("agentctl",
	// "console").
	By     string
	Via    string
	Reason string
	// For is how long a session approval stands (the call's approval
	// expiry when zero).
	For time.Duration
	// DistinctApprover refuses an approval by the requester (the
	// requester's policy enforces it again when the call runs).
	DistinctApprover bool
	Now              func() time.Time // time.Now when nil
}

// Decide records d on the queued call id. An approval stays on the record,
// PENDING_APPROVAL until the same expiry, for the next call with the key to
// consume; a denial makes it DENIED, and that call gets the denial.
func Decide(ctx context.Context, st ledger.Store, id ledger.ID, d Decision) (*ledger.Record, error) {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	rec, err := st.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	q, ok := QueuedCall(rec)
	if !ok {
		return rec, fmt.Errorf("%w: %s key %s is %s", ErrNotQueued, id.Tool, id.Key, rec.State)
	}
	at := now().UTC()
	left := rec.LeaseUntil.Sub(at)
	if left <= 0 {
		return rec, fmt.Errorf("%w: %s key %s: its approval expired at %s", ErrNotQueued, id.Tool, id.Key, rec.LeaseUntil.UTC().Format(time.RFC3339))
	}
	if d.By == "" {
		return rec, errors.New("client: a decision needs the name of the person who gives it")
	}
	ap := &ledger.Approval{By: d.By, Via: d.Via, At: at, Reason: d.Reason, Fingerprint: rec.Fingerprint,
		PolicyVersion: q.PolicyVersion, Expires: rec.LeaseUntil.UTC(), Requester: q.Requester}
	dec := ledger.Decision{Approval: ap}
	switch {
	case !d.Approve:
		if strings.TrimSpace(d.Reason) == "" {
			return rec, errors.New("client: a denial needs a reason")
		}
		ap.Decision, dec.On, dec.Reason = ledger.DecisionDenied, ledger.OnDeny, d.Reason
	case d.DistinctApprover && d.By == q.Requester:
		return rec, fmt.Errorf("%w (%s)", ErrSameApprover, q.Requester)
	default:
		ap.Decision, dec.On, dec.Owner, dec.Lease = ledger.DecisionApproved, ledger.OnApproveLater, queueOwner(true, q.PolicyVersion, q.Requester), left
		if d.ForSession {
			ap.Decision, ap.Expires = ledger.DecisionApprovedSession, at.Add(cmpOr(d.For, left))
		}
	}
	after, err := ledger.Decide(ctx, st, rec, dec)
	if err != nil {
		return rec, fmt.Errorf("client: record the decision on %s key %s: %w", id.Tool, id.Key, err)
	}
	return after, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// KindReconciled is the ErrorKind of a record a person reconciled; its
// ErrorMessage says who, when and the note.
const KindReconciled = ledger.KindReconciled

// MetaReconciled marks the result of a reconciled record, beside the replay
// marker, so a runtime can tell it from a result the tool returned.
const MetaReconciled = "io.github.mcpledger/reconciled"

// Reconciliation is what someone found out about an UNKNOWN call.
type Reconciliation struct {
	// As is ledger.StateSucceeded (found), ledger.StateFailed (the tool
	// refused it) or ledger.StateRetryable (provably not run: the next
	// call with the key runs it).
	As ledger.State
	// By and Note say who found out and how; At is when (now when zero),
	// for the text kept on the record (the ledger stamps the resolution
	// with its own clock).
	By, Note string
	At       time.Time
	// Method is how it was found out (ledger.MethodPerson when empty).
	Method ledger.Method
	// Result is what every later duplicate gets back: the tool's own
	// result as its SDK's type (a go-sdk or mcp-go CallToolResult, encoded
	// as JSON) or raw JSON. Nil stores one text result that says who
	// reconciled it and why (isError for FAILED), marked in _meta. A
	// RETRYABLE record keeps no result.
	Result any
}

// Reconcile settles the UNKNOWN record id as r says, once someone has
// checked what really happened (the payments table, the downstream asked
// by its key): ledger.Resolve with the finding r stands for, recorded as
// the record's resolution (method, by, when, the note as evidence). The
// record also keeps who, when and the note in its error message. A record
// that is no longer UNKNOWN is left as it is and the error wraps
// ledger.ErrStateChanged (or ledger.ErrLeaseLost once a re-send took it
// over). It is the one reconcile of the client, the server guard, the CLI
// and the console.
func Reconcile(ctx context.Context, st ledger.Store, id ledger.ID, r Reconciliation) (*ledger.Record, error) {
	to := r.As
	if to != ledger.StateSucceeded && to != ledger.StateFailed && to != ledger.StateRetryable {
		return nil, fmt.Errorf("reconcile as %s: want SUCCEEDED, FAILED or RETRYABLE (not run): %w", to, ledger.ErrIllegalTransition)
	}
	rec, err := st.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	if rec.State != ledger.StateUnknown {
		return rec, fmt.Errorf("%w: record %s (%s) is %s; only UNKNOWN records are reconciled", ledger.ErrStateChanged, rec.Key, rec.Tool, rec.State)
	}
	now := r.At
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	message := fmt.Sprintf("reconciled as %s", to)
	if r.By != "" {
		message += " by " + r.By
	}
	message += " at " + now.Format(time.RFC3339)
	if r.Note != "" {
		message += ": " + r.Note
	}
	var result json.RawMessage
	switch res := r.Result.(type) {
	case nil:
		if to == ledger.StateRetryable {
			break
		}
		text := fmt.Sprintf("%s (key %s): the outcome was unknown; %s.", rec.Tool, rec.Key, message)
		// A tool result with one text content, isError for FAILED, as
		// every SDK decodes it.
		type content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		out := struct {
			Meta    map[string]any `json:"_meta"`
			Content []content      `json:"content"`
			IsError bool           `json:"isError,omitempty"`
		}{
			Meta: map[string]any{MetaReconciled: map[string]any{
				"as": string(to), "by": r.By, "at": now.Format(time.RFC3339), "note": r.Note,
			}},
			Content: []content{{Type: "text", Text: text}},
			IsError: to == ledger.StateFailed,
		}
		if result, err = json.Marshal(out); err != nil {
			return nil, fmt.Errorf("reconcile: encode the result: %w", err)
		}
	case json.RawMessage:
		result = res
	default:
		if result, err = json.Marshal(res); err != nil {
			return nil, fmt.Errorf("reconcile: encode the result: %w", err)
		}
	}
	return ledger.Reconcile(ctx, st, rec.ID, ledger.Reconciliation{As: to, Result: result, Message: message,
		Method: r.Method, By: r.By, Note: r.Note})
}

package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

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
	if v := ledger.RowOf(to).Verdict; v == "" || v == ledger.VerdictUnknown {
		return nil, fmt.Errorf("reconcile as %s: want SUCCEEDED, FAILED or RETRYABLE (not run): %w", to, ledger.ErrIllegalTransition)
	}
	rec, err := st.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	if ledger.RowOf(rec.State).Act != ledger.ActReconcile {
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
		if ledger.RowOf(to).Ran == ledger.RanNo {
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
			Meta: map[string]any{wire.MetaReconciled: map[string]any{
				"as": string(to), "by": r.By, "at": now.Format(time.RFC3339), "note": r.Note,
			}},
			Content: []content{{Type: "text", Text: text}},
			IsError: ledger.RowOf(to).IsError,
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

// ReconcileRequest is what a reconciler is asked about: the UNKNOWN
// operation (tenant, tool, key) and its arguments.
type ReconcileRequest struct {
	Tenant string
	Tool   string
	Key    string
	// Arguments are the call's arguments: as the request sent them when a
	// call met the UNKNOWN record, as the record keeps them (redacted) in
	// the background sweep.
	Arguments json.RawMessage
}

// Reconciler looks an UNKNOWN operation up in the server's own data (the
// payments table by idempotency key) and says what it found
// (DESIGN.md, "Reconciliation"): ledger.VerdictFound with the result every
// repeat gets back, VerdictFailed, VerdictNotRun when the effect is
// provably absent and cannot appear any more (the next call with the key
// runs it), or VerdictUnknown with what it saw. An error, or no answer
// within Options.ReconcileBudget, is an unknown finding: the record stays
// UNKNOWN with the attempt in its history.
type Reconciler func(ctx context.Context, req ReconcileRequest) (ledger.Finding, error)

// DefaultReconcileBudget bounds one reconciler call when
// Options.ReconcileBudget is zero.
const DefaultReconcileBudget = 2 * time.Second

// resolve asks the tool's reconciler about rec, an UNKNOWN record, and
// records its finding (ledger.Resolve). It returns the record as it is
// after, and false when the tool has no reconciler or rec is a tombstone
// (only a person may decide then).
func (g *Guard) resolve(ctx context.Context, rec *ledger.Record, args json.RawMessage) (*ledger.Record, bool) {
	rc := g.opts.Reconcilers[rec.Tool]
	if rc == nil || rec.Tombstone {
		return rec, false
	}
	f := g.find(ctx, rc, ReconcileRequest{Tenant: rec.Tenant, Tool: rec.Tool, Key: rec.Key, Arguments: args})
	out, err := ledger.Resolve(ctx, g.store, rec, f)
	switch {
	case err == nil:
		g.tel.Resolved(ctx, rec, out, ledger.MethodReconciler)
		g.opts.Logger.InfoContext(ctx, "mcpledger server: reconciled", "tool", rec.Tool, "tenant", rec.Tenant,
			"key", ledger.ShortHash(rec.Key), "verdict", f.Verdict, "state", out.State)
		return out, true
	case out != nil:
		// Another finding or the owner's late write came first: the
		// record as it is now answers.
		return out, true
	}
	if ctx.Err() == nil {
		g.opts.Logger.ErrorContext(ctx, "mcpledger server: recording a reconciler's finding failed; the record stays UNKNOWN",
			"tool", rec.Tool, "key", ledger.ShortHash(rec.Key), "err", err)
	}
	return rec, true
}

// find calls rc within the reconcile budget. A failure or no answer in
// time is an unknown finding that says so.
func (g *Guard) find(ctx context.Context, rc Reconciler, req ReconcileRequest) ledger.Finding {
	rctx, cancel := context.WithTimeout(ctx, g.opts.ReconcileBudget)
	defer cancel()
	type answer struct {
		f   ledger.Finding
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			if r := recover(); r != nil {
				a = answer{err: fmt.Errorf("the reconciler panicked: %v", r)}
			}
			done <- a
		}()
		a.f, a.err = rc(rctx, req)
	}()
	var a answer
	select {
	case a = <-done:
	case <-rctx.Done():
		a.err = fmt.Errorf("the reconciler did not answer within %s", g.opts.ReconcileBudget)
	}
	f := a.f
	if a.err != nil {
		f = ledger.Finding{Verdict: ledger.VerdictUnknown, Evidence: a.err.Error()}
	}
	if !slices.Contains(ledger.Verdicts, f.Verdict) {
		f = ledger.Finding{Verdict: ledger.VerdictUnknown, Evidence: fmt.Sprintf("the reconciler answered no verdict (%q)", f.Verdict)}
	}
	f.Method = ledger.MethodReconciler
	if f.By == "" {
		f.By = "reconciler of " + req.Tool
	}
	return f
}

// ReconcileRecord asks the tool's reconciler about the UNKNOWN record id
// now, records its finding (ledger.Resolve) and returns the record as it
// is after: what a person runs by hand, with the function the Guard runs
// by itself. A record that is not UNKNOWN, or a tool without a
// reconciler, is an error, and nothing changes.
func (g *Guard) ReconcileRecord(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	rc := g.opts.Reconcilers[id.Tool]
	if rc == nil {
		return nil, fmt.Errorf("guard: tool %q has no reconciler; give one in the options' Reconcilers, or reconcile the record by hand", id.Tool)
	}
	rec, err := g.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("guard: reconcile %s key %s: %w", id.Tool, ledger.ShortHash(id.Key), err)
	}
	if ledger.Act(rec) != ledger.ActReconcile || rec.Tombstone {
		return rec, fmt.Errorf("guard: reconcile %s key %s: the record is %s; only UNKNOWN records are reconciled: %w",
			id.Tool, ledger.ShortHash(id.Key), rec.State, ledger.ErrStateChanged)
	}
	f := g.find(ctx, rc, ReconcileRequest{Tenant: rec.Tenant, Tool: rec.Tool, Key: rec.Key, Arguments: rec.Arguments})
	out, err := ledger.Resolve(ctx, g.store, rec, f)
	if err == nil {
		g.tel.Resolved(ctx, rec, out, ledger.MethodReconciler)
	}
	return out, err
}

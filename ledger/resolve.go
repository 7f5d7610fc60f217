package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/ledger/redact"
)

// This file is the one way an UNKNOWN record leaves UNKNOWN on evidence
// (DESIGN.md, "Reconciliation"): a reconciler's Finding, recorded by
// Resolve through the state table, fenced like an owner's write.

// Resolution is one finding as the record keeps it: what was found, how,
// by whom, when (the store's clock) and on what evidence. Record.Reconciled
// is the one that settled the record; Record.Findings lists every one.
type Resolution struct {
	Verdict  Verdict   `json:"verdict"`
	Method   Method    `json:"method"`
	By       string    `json:"by,omitempty"`
	At       time.Time `json:"at"`
	Evidence string    `json:"evidence,omitempty"`
	// Since is when the record became UNKNOWN (its update time when it was
	// resolved: inconclusive findings leave that as it is), on the finding
	// that settled it: At − Since is the time to resolution, which the
	// console charts.
	Since time.Time `json:"since,omitzero"`
}

// Text describes r in one line for people.
func (r *Resolution) Text() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s by %s", r.Verdict, r.Method)
	if r.By != "" {
		fmt.Fprintf(&b, " (%s)", r.By)
	}
	if !r.At.IsZero() {
		fmt.Fprintf(&b, " at %s", r.At.UTC().Format(time.RFC3339))
	}
	if r.Evidence != "" {
		fmt.Fprintf(&b, ": %s", r.Evidence)
	}
	return b.String()
}

// Bounds of what a record keeps of its findings.
const (
	// MaxFindings is how many findings a record's history keeps: the
	// latest ones (FindingCount counts them all).
	MaxFindings = 16
	// maxEvidence and maxBy bound a finding's free text, in runes.
	maxEvidence = 500
	maxBy       = 200
)

// The backoff of background reconciliation: after an inconclusive finding
// the next attempt is due ReconcileBackoff later, twice as long after each
// further one in a row, at most ReconcileBackoffMax.
const (
	ReconcileBackoff    = 5 * time.Second
	ReconcileBackoffMax = 15 * time.Minute
)

// ReconcileDelay is how long after the n-th inconclusive finding in a row
// (n from 1) the next background attempt is due.
func ReconcileDelay(n int) time.Duration {
	d := ReconcileBackoff
	for i := 1; i < n && d < ReconcileBackoffMax; i++ {
		d *= 2
	}
	return min(d, ReconcileBackoffMax)
}

// FindingWrite is what a Transition records of a finding (Resolve builds
// it; stores write it with Encode).
type FindingWrite struct {
	// Count is the record's FindingCount as the finding's author read it;
	// the transition is a compare-and-set on it too, and the store writes
	// Count+1.
	Count int
	// Findings is the whole history to store, the new finding last with a
	// zero At: the store stamps it with its own clock.
	Findings []Resolution
	// Settles: the new finding settled the record, which keeps it as
	// Record.Reconciled.
	Settles bool
	// Delay is, for a finding that does not settle, how long from now the
	// next background attempt is due.
	Delay time.Duration
}

// Encode is what a store writes for w at now (its clock): the resolution
// (nil unless w settles), the history as JSON, and when the next attempt
// is due (zero when w settles). The Resolution values are the record's
// Reconciled and Findings as stored.
func (w *FindingWrite) Encode(now time.Time) (reconciled *Resolution, findings []Resolution, rawReconciled, rawFindings []byte, due time.Time, err error) {
	now = now.UTC()
	findings = append([]Resolution(nil), w.Findings...)
	if n := len(findings); n > 0 && findings[n-1].At.IsZero() {
		findings[n-1].At = now
	}
	if rawFindings, err = json.Marshal(findings); err != nil {
		return nil, nil, nil, nil, time.Time{}, fmt.Errorf("ledger: encode findings: %w", err)
	}
	if w.Settles && len(findings) > 0 {
		last := findings[len(findings)-1]
		reconciled = &last
		if rawReconciled, err = json.Marshal(reconciled); err != nil {
			return nil, nil, nil, nil, time.Time{}, fmt.Errorf("ledger: encode resolution: %w", err)
		}
		return reconciled, findings, rawReconciled, rawFindings, time.Time{}, nil
	}
	return nil, findings, nil, rawFindings, now.Add(w.Delay), nil
}

// DecodeFindings reads the stored forms Encode made (nil or empty raw
// values are none).
func DecodeFindings(rawReconciled, rawFindings []byte) (*Resolution, []Resolution, error) {
	var rec *Resolution
	if len(rawReconciled) > 0 {
		rec = new(Resolution)
		if err := json.Unmarshal(rawReconciled, rec); err != nil {
			return nil, nil, fmt.Errorf("ledger: decode resolution: %w", err)
		}
	}
	var fs []Resolution
	if len(rawFindings) > 0 {
		if err := json.Unmarshal(rawFindings, &fs); err != nil {
			return nil, nil, fmt.Errorf("ledger: decode findings: %w", err)
		}
	}
	return rec, fs, nil
}

// trigger is the table's event for a verdict.
func (v Verdict) trigger() (Trigger, error) {
	switch v {
	case VerdictFound:
		return OnSucceeded, nil
	case VerdictFailed:
		return OnFailed, nil
	case VerdictNotRun:
		return OnNotRun, nil
	case VerdictUnknown:
		return OnInconclusive, nil
	}
	return "", fmt.Errorf("%w: no verdict %q; want found, failed, not_run or unknown", ErrIllegalTransition, v)
}

// Valid reports whether m is one of the methods.
func (m Method) Valid() bool {
	for _, v := range Methods {
		if m == v {
			return true
		}
	}
	return false
}

// resolveRetries bounds how often Resolve records its finding again after
// other findings on the same record were recorded first.
const resolveRetries = 16

// Resolve records the finding f on rec, the UNKNOWN record as its
// reconciler read it, through the state table:
//   - VerdictFound: SUCCEEDED with f.Result (OnSucceeded);
//   - VerdictFailed: FAILED with f.Result (OnFailed);
//   - VerdictNotRun: RETRYABLE (OnNotRun), so the next call with the key
//     claims it and runs;
//   - VerdictUnknown: it stays UNKNOWN (OnInconclusive) and its next
//     background attempt is due after f.RetryIn, or ReconcileDelay of the
//     inconclusive findings in a row.
//
// A settling finding is kept as the record's Reconciled, with
// KindReconciled as its error kind and a message that says what was found;
// every finding joins Findings (at most MaxFindings, the latest). A found
// or failed finding without a result stores one text result that says
// who found what. By and Evidence are redacted and kept to one line.
//
// It is a compare-and-set on the state UNKNOWN and rec.Fence: once the
// owner's late result is recorded, or another finding settled the record,
// Resolve changes nothing and fails with ErrStateChanged; once the key was
// taken over (a re-send raises the fence) it fails with ErrLeaseLost.
// Either way it returns the record as it is now, when it could read it.
// Findings recorded at once on a record that stays UNKNOWN all join its
// history.
func Resolve(ctx context.Context, st Store, rec *Record, f Finding) (*Record, error) {
	return resolve(ctx, st, rec, f, "", "")
}

// resolve is Resolve with the error kind and message a caller chose ("":
// KindReconciled and the message Resolve writes).
func resolve(ctx context.Context, st Store, rec *Record, f Finding, kind, message string) (*Record, error) {
	if rec == nil {
		return nil, errors.New("ledger: resolve: no record given")
	}
	on, err := f.Verdict.trigger()
	if err != nil {
		return nil, err
	}
	if !f.Method.Valid() {
		return nil, fmt.Errorf("ledger: resolve %s key %s: no method %q; want one of resend, reconciler, probe, callback, person", rec.Tool, ShortHash(rec.Key), f.Method)
	}
	if rec.State != StateUnknown || rec.Tombstone {
		return rec, fmt.Errorf("ledger: resolve %s key %s: the record is %s, not UNKNOWN: %w", rec.Tool, ShortHash(rec.Key), rec.State, ErrStateChanged)
	}
	to, err := Next(StateUnknown, on)
	if err != nil {
		return nil, err
	}
	entry := Resolution{
		Verdict: f.Verdict, Method: f.Method,
		By:       OneLine(redact.Text(f.By), maxBy),
		Evidence: OneLine(redact.Text(f.Evidence), maxEvidence),
	}
	settles := f.Verdict != VerdictUnknown
	if settles {
		entry.Since = rec.UpdatedAt
	}
	if kind == "" {
		kind = KindReconciled
	}
	if message == "" {
		message = fmt.Sprintf("reconciled as %s by %s", to, entry.Method)
		if entry.By != "" {
			message += " " + entry.By
		}
		if entry.Evidence != "" {
			message += ": " + entry.Evidence
		}
	}
	result := f.Result
	if settles && to != StateRetryable && len(result) == 0 {
		if result, err = textResult(rec, to, message); err != nil {
			return nil, err
		}
	}
	start := rec
	for range resolveRetries {
		t := Transition{ID: rec.ID, From: StateUnknown, To: to, Fence: rec.Fence, AddAttempts: f.Attempts,
			Finding: &FindingWrite{Count: rec.FindingCount, Findings: appendFinding(rec.Findings, entry), Settles: settles}}
		if settles {
			t.ErrorKind, t.ErrorMessage = kind, message
			if to != StateRetryable {
				t.Result = result
			}
		} else {
			t.Finding.Delay = f.RetryIn
			if t.Finding.Delay <= 0 {
				t.Finding.Delay = ReconcileDelay(inconclusiveRun(t.Finding.Findings))
			}
		}
		out, err := st.Transition(ctx, t)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, ErrStateChanged) && !errors.Is(err, ErrLeaseLost) {
			return nil, err
		}
		cur, gerr := st.Get(ctx, rec.ID)
		if gerr != nil {
			return nil, err
		}
		switch {
		case cur.Tombstone || cur.Fence != start.Fence:
			return cur, fmt.Errorf("ledger: resolve %s key %s: the key was taken over (fence %d, not %d) and is %s: %w",
				rec.Tool, ShortHash(rec.Key), cur.Fence, start.Fence, cur.State, ErrLeaseLost)
		case cur.State != StateUnknown:
			return cur, fmt.Errorf("ledger: resolve %s key %s: the record is already %s: %w", rec.Tool, ShortHash(rec.Key), cur.State, ErrStateChanged)
		case cur.FindingCount == rec.FindingCount:
			// Not a finding recorded first: the store refused for a reason
			// a second try would meet again.
			return cur, err
		}
		// Another finding joined the history first: record this one after it.
		rec = cur
	}
	return rec, fmt.Errorf("ledger: resolve %s key %s: other findings kept being recorded first; try again: %w", rec.Tool, ShortHash(rec.Key), ErrStateChanged)
}

// appendFinding is fs with f last, at most MaxFindings long.
func appendFinding(fs []Resolution, f Resolution) []Resolution {
	if len(fs) >= MaxFindings {
		fs = fs[len(fs)-MaxFindings+1:]
	}
	out := make([]Resolution, 0, len(fs)+1)
	return append(append(out, fs...), f)
}

// inconclusiveRun counts the inconclusive findings at the end of fs.
func inconclusiveRun(fs []Resolution) int {
	n := 0
	for i := len(fs) - 1; i >= 0 && fs[i].Verdict == VerdictUnknown; i-- {
		n++
	}
	return n
}

// textResult is the result a settled record gets when its finding brought
// none: one text content that says what was found (isError for FAILED),
// as every MCP SDK decodes a CallToolResult.
func textResult(rec *Record, to State, message string) (json.RawMessage, error) {
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	out := struct {
		Content []content `json:"content"`
		IsError bool      `json:"isError,omitempty"`
	}{
		Content: []content{{Type: "text", Text: fmt.Sprintf("%s (key %s): the outcome was unknown; %s.", rec.Tool, rec.Key, message)}},
		IsError: to == StateFailed,
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("ledger: resolve: encode the result: %w", err)
	}
	return b, nil
}

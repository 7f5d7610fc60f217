package ledger

import (
	"encoding/json"
	"time"
)

// This file is what a reconciler answers about one UNKNOWN record
// (DESIGN.md, "Reconciliation"): a verdict on evidence, never a guess.

// Verdict is what a reconciler found out about an UNKNOWN call.
type Verdict string

// The verdicts of DESIGN.md, "Reconciliation".
const (
	// VerdictFound: the effect exists; the record becomes SUCCEEDED with
	// the finding's result.
	VerdictFound Verdict = "found"
	// VerdictFailed: the tool refused it; the record becomes FAILED.
	VerdictFailed Verdict = "failed"
	// VerdictNotRun: provably absent; the record becomes RETRYABLE and the
	// same key runs on its next call.
	VerdictNotRun Verdict = "not_run"
	// VerdictUnknown: no evidence; the record stays UNKNOWN and the attempt
	// joins its history.
	VerdictUnknown Verdict = "unknown"
)

// Verdicts lists the verdicts in a stable order.
var Verdicts = []Verdict{VerdictFound, VerdictFailed, VerdictNotRun, VerdictUnknown}

// Method is how an UNKNOWN record was resolved, cheapest first; it is the
// method label of the mcpledger.unknown.resolved metric.
type Method string

// The resolution methods of DESIGN.md, "Reconciliation".
const (
	// MethodResend: a key-aware server answered a re-send with its record.
	MethodResend Method = "resend"
	// MethodReconciler: the server's own per-tool reconciler looked the key
	// up in the server's data.
	MethodReconciler Method = "reconciler"
	// MethodProbe: a read-only tool of the same server, named in the
	// policy file, was asked.
	MethodProbe Method = "probe"
	// MethodCallback: a downstream system reported the outcome over HTTP.
	MethodCallback Method = "callback"
	// MethodPerson: a person decided (agentctl ledger reconcile, the
	// console).
	MethodPerson Method = "person"
)

// Methods lists the methods in a stable order.
var Methods = []Method{MethodResend, MethodReconciler, MethodProbe, MethodCallback, MethodPerson}

// Finding is one reconciler's answer about one UNKNOWN record.
type Finding struct {
	Verdict Verdict
	// Result is the CallToolResult JSON every later repeat gets back, for
	// VerdictFound and VerdictFailed.
	Result json.RawMessage
	// Method and By say who or what found it out: the reconciler's tool,
	// the probe's tool, the callback token's name, the person's account.
	Method Method
	By     string
	// Evidence is what was seen, in one line, for the record's history
	// (redacted before it is stored or shown).
	Evidence string
	// RetryIn, for VerdictUnknown, is when the next background attempt is
	// due, from now (the rest of a probe's quiet period, say); zero leaves
	// it to ReconcileDelay.
	RetryIn time.Duration
	// Attempts is how many requests finding it out sent to the tool (a
	// re-send), added to the record's Attempts.
	Attempts int
}

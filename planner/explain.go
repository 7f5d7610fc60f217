package planner

import (
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Explain is the short text a model reads instead of a second execution:
// what the earlier call became, when, its key, and that it should not issue
// the call again but may ask ledger_status.
func Explain(v Verdict) string {
	if v.Record == nil {
		return "No earlier call with these arguments was found in this session; the call is new."
	}
	if r := v.Record; v.Decision == Run && ledger.RowOf(r.State).Again != "" {
		return fmt.Sprintf("An earlier call of %s with these arguments (key %s, first sent %s) %s.",
			r.Tool, r.Key, stamp(r.CreatedAt), ledger.RowOf(r.State).Again)
	}
	return ExplainRecord(v.Record)
}

// ExplainRecord describes one record for a model, by its state: the
// ledger's one text for it (ledger.Explain).
func ExplainRecord(r *ledger.Record) string {
	return ledger.Explain(r)
}

// stamp formats a time for a model: RFC 3339 in UTC, to the second.
func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

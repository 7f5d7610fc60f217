package planner

import (
	"fmt"
	"strings"
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
	if v.Decision == New {
		r := v.Record
		return fmt.Sprintf("An earlier call of %s with these arguments (key %s, first sent %s) never reached the tool; it is sent again under the same key.",
			r.Tool, r.Key, stamp(r.CreatedAt))
	}
	return ExplainRecord(v.Record)
}

// ExplainRecord describes one record for a model, by its state. Clients use
// it for the text of errors about a key (in progress, outcome unknown,
// denied).
func ExplainRecord(r *ledger.Record) string {
	if r == nil {
		return "No such call was found in this session."
	}
	var s strings.Builder
	what := fmt.Sprintf("The call of %s with these arguments (key %s) ", r.Tool, r.Key)
	s.WriteString(what)
	switch {
	case r.Tombstone:
		fmt.Fprintf(&s, "was made on %s and its record has since expired, so whether it took effect can no longer be shown. A person must decide before it is sent again. Do not issue it again",
			stamp(r.CreatedAt))
	case r.State == ledger.StateSucceeded:
		fmt.Fprintf(&s, "already ran on %s and succeeded", stamp(r.CreatedAt))
		if r.Attempts > 1 {
			fmt.Fprintf(&s, " after %d attempts", r.Attempts)
		}
		s.WriteString("; its recorded result is returned. Do not issue it again")
	case r.State == ledger.StateFailed:
		fmt.Fprintf(&s, "already ran on %s and the tool reported an error; that result is returned. Do not issue the same call again; change the arguments if a different call is meant",
			stamp(r.CreatedAt))
	case r.State == ledger.StateProcessing:
		fmt.Fprintf(&s, "is still in progress (sent %s). Do not issue it again; its outcome will be recorded", stamp(r.CreatedAt))
	case r.State == ledger.StatePendingApproval:
		fmt.Fprintf(&s, "is waiting for a person's approval (since %s). Do not issue it again", stamp(r.CreatedAt))
	case r.State == ledger.StateDenied:
		fmt.Fprintf(&s, "was denied on %s", stamp(r.UpdatedAt))
		if r.Approval != nil && r.Approval.Reason != "" {
			fmt.Fprintf(&s, " (reason: %s)", oneLine(r.Approval.Reason))
		}
		s.WriteString(". Do not issue it again")
	case r.State == ledger.StateRetryable:
		fmt.Fprintf(&s, "was not delivered to the tool (first tried %s); it may be sent again under the same key", stamp(r.CreatedAt))
	default: // UNKNOWN
		fmt.Fprintf(&s, "was sent on %s but its outcome is unknown: it may or may not have taken effect. A person must reconcile it. Do not issue it again", stamp(r.CreatedAt))
	}
	fmt.Fprintf(&s, ". To check on it, call ledger_status with key %q.", r.Key)
	return s.String()
}

// stamp formats a time for a model: RFC 3339 in UTC, to the second.
func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// oneLine keeps a person's free text from breaking the message's shape.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

package planner

import (
	"fmt"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
)

// maxResultText is the largest stored result ledger_status repeats in its
// text; larger ones are in the structured content only.
const maxResultText = 16 << 10

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func statusText(r *ledger.Record, matches int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s, key %s: %s; %s. First sent %s, last changed %s, %s.",
		r.Tool, r.Key, r.State, ledger.Meaning(r), stamp(r.CreatedAt), stamp(r.UpdatedAt), attempts(r.Attempts))
	if matches > 1 {
		fmt.Fprintf(&s, " %d calls match; this is the newest. Ask by key and tool for another.", matches)
	}
	if r.Reconciled != nil {
		fmt.Fprintf(&s, "\nReconciled: %s.", r.Reconciled.Text())
	} else if n := len(r.Findings); n > 0 && ledger.RowOf(r.State).Act == ledger.ActReconcile {
		fmt.Fprintf(&s, "\n%s so far found no evidence either way; the last: %s.", reconcileAttempts(r.FindingCount), r.Findings[n-1].Text())
		if !r.ReconcileAt.IsZero() {
			fmt.Fprintf(&s, " The next is due %s.", stamp(r.ReconcileAt))
		}
	}
	switch {
	case len(r.Result) == 0:
	case len(r.Result) > maxResultText:
		fmt.Fprintf(&s, "\nThe recorded result (%d bytes) is in the structured content (call.result).", len(r.Result))
	default:
		fmt.Fprintf(&s, "\nRecorded result: %s", r.Result)
	}
	if r.Compacted {
		s.WriteString("\nThe result was compacted when it was stored: only what identifies the outcome was kept.")
	}
	return s.String()
}

func reconcileAttempts(n int) string {
	if n == 1 {
		return "1 reconciliation attempt"
	}
	return fmt.Sprintf("%d reconciliation attempts", n)
}

func notFound(in StatusInput) string {
	switch {
	case in.Key != "" && in.Tool != "":
		return fmt.Sprintf("No call of %s with key %s was found in this session.", in.Tool, in.Key)
	case in.Key != "":
		return fmt.Sprintf("No call with key %s was found in this session.", in.Key)
	}
	return fmt.Sprintf("No call of %s with these arguments was found in this session.", in.Tool)
}

func listText(out ListOutput) string {
	if len(out.Calls) == 0 {
		return "No calls are recorded in this session."
	}
	var s strings.Builder
	if len(out.Calls) == 1 {
		s.WriteString("1 call in this session:")
	} else {
		fmt.Fprintf(&s, "%d calls in this session, newest first:", len(out.Calls))
	}
	for i, c := range out.Calls {
		fmt.Fprintf(&s, "\n%d. %s, key %s: %s, %s, first sent %s, last changed %s",
			i+1, c.Tool, c.Key, c.State, attempts(c.Attempts), c.CreatedAt, c.UpdatedAt)
	}
	if out.More {
		fmt.Fprintf(&s, "\nOlder calls exist; ask again with cursor %q to see them.", out.Next)
	}
	return s.String()
}

package audit

import (
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Entry is one step of a record's history.
type Entry struct {
	At   time.Time `json:"at"`
	What string    `json:"what"`
	// Detail is free text from the record (a reason, an error message).
	Detail string `json:"detail,omitempty"`
}

// Timeline is what a record tells of its own history, oldest first: when
// it was claimed (and how often and under which fence), the approval
// decision, and where it stands since its last update. The ledger keeps a
// record's latest state, not every step it passed through, so the steps in
// between are not shown.
func Timeline(r *ledger.Record) []Entry {
	claimed := "claimed"
	if r.Fence > 1 {
		claimed = fmt.Sprintf("claimed (key taken over since: fence %d)", r.Fence)
	}
	out := []Entry{{At: r.CreatedAt, What: claimed}}
	if ap := r.Approval; ap != nil {
		e := Entry{At: ap.At, What: fmt.Sprintf("%s by %s", ap.Decision, orNobody(ap.By)), Detail: ap.Reason}
		if ap.Via != "" && ap.Via != ledger.ViaStanding {
			e.What += " (" + ap.Via + ")"
		}
		if s := ap.Standing; s != nil {
			ref := fmt.Sprintf("by the standing approval given on %s key %s at %s, until %s",
				s.Tool, s.Key, s.Given.UTC().Format(time.RFC3339), ap.Expires.UTC().Format(time.RFC3339))
			if e.Detail != "" {
				ref = e.Detail + "; " + ref
			}
			e.Detail = ref
		}
		out = append(out, e)
	}
	now := Entry{At: r.UpdatedAt, What: string(r.State)}
	switch {
	case r.Tombstone:
		now.What += " (tombstone: only key and fingerprint remain)"
	case r.State.Waiting() && !r.LeaseUntil.IsZero():
		now.What += fmt.Sprintf(", leased by %s until %s", r.Owner, r.LeaseUntil.UTC().Format(time.RFC3339))
	}
	if r.Attempts > 0 {
		now.What += fmt.Sprintf(" after %d attempt(s)", r.Attempts)
	}
	if r.ErrorKind != "" || r.ErrorMessage != "" {
		now.Detail = r.ErrorKind
		if r.ErrorMessage != "" {
			if now.Detail != "" {
				now.Detail += ": "
			}
			now.Detail += r.ErrorMessage
		}
	}
	// Every reconciliation attempt the record keeps, at its own time: those
	// up to its last update before it, the inconclusive ones on an UNKNOWN
	// record after (its UpdatedAt says when it became UNKNOWN).
	var after []Entry
	for _, f := range r.Findings {
		e := Entry{At: f.At, What: fmt.Sprintf("reconcile: %s by %s", f.Verdict, f.Method), Detail: f.Evidence}
		if f.By != "" {
			e.What += " (" + f.By + ")"
		}
		if f.At.After(now.At) {
			after = append(after, e)
			continue
		}
		out = append(out, e)
	}
	out = append(append(out, now), after...)
	if ledger.RowOf(r.State).Act == ledger.ActReconcile && !r.ReconcileAt.IsZero() {
		out = append(out, Entry{At: r.ReconcileAt, What: "next reconcile attempt due"})
	}
	if !r.ExpiresAt.IsZero() && r.State.Settled() {
		out = append(out, Entry{At: r.ExpiresAt, What: "retention ends"})
	}
	return out
}

func orNobody(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}

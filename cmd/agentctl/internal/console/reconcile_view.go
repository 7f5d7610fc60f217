package console

import (
	"fmt"
	"html/template"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// This file is what the pages show of reconciliation: how long a record
// has been UNKNOWN, the attempts made to find out what became of it, and
// what settled it (web/reconcile.html).

// reconcileFuncs are the template functions of web/reconcile.html.
func (c *Console) reconcileFuncs() template.FuncMap {
	return template.FuncMap{
		// age is how long r has been UNKNOWN: an UNKNOWN record's last
		// update is the write that made it so (an inconclusive attempt
		// leaves it as it is).
		"age": func(r *ledger.Record) string { return ago(c.opts.Now().Sub(r.UpdatedAt)) },
		// due says when the next background attempt on r is due.
		"due": func(r *ledger.Record) string {
			if d := r.ReconcileAt.Sub(c.opts.Now()); d > 0 {
				return "attempt in " + ago(d)
			}
			return "attempt due now"
		},
		"lastFinding": func(r *ledger.Record) *ledger.Resolution {
			if len(r.Findings) == 0 {
				return nil
			}
			return &r.Findings[len(r.Findings)-1]
		},
	}
}

// ago is a duration as a person reads an age: two units at most.
func ago(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerShowCmd) }

func newLedgerShowCmd(a *app) *cobra.Command {
	var tool string
	c := &cobra.Command{
		Use:   "show KEY [--tool T] [--layer L]",
		Short: "Show a key's records: state, attempts, approval, error and result (one per layer in a shared ledger)",
		Example: `  agentctl ledger show order-42
  agentctl ledger show order-42 --tool create_payment --json`,
		Args: usageArgs(1, 1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			st, err := a.ledger(c.Context(), readOnly)
			if err != nil {
				return err
			}
			// In a shared ledger a client, a proxy and a server guard
			// each keep a record of one key: show each.
			recs, err := a.findAllByKey(c.Context(), st, args[0], tool, "")
			if err != nil {
				return err
			}
			// Show is asked for the payload: one it cannot decrypt ends
			// the command (exit 2) with the key id it needs.
			if err := unreadable(c.Context(), st, recs); err != nil {
				return err
			}
			for i, r := range recs {
				if a.json {
					if err := a.printJSON(r); err != nil {
						return err
					}
					continue
				}
				if i > 0 {
					a.println()
				}
				if err := a.showRecord(r); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	c.Flags().StringVar(&tool, "tool", "", "the record's `TOOL`, when several tools used the key")
	return c
}

// showRecord prints a record as aligned "field value" lines.
func (a *app) showRecord(r *ledger.Record) error {
	t := newTable(a.io.Out, a.colour(), "FIELD", "VALUE").keep(0)
	t.row("key", r.Key)
	t.row("tool", r.Tool)
	t.row("tenant", r.Tenant)
	t.row("layer", layerText(r.Layer))
	t.row("session", orDash(r.Session))
	t.row("state", t.paint(stateColour(r.State), string(r.State)))
	t.row("meaning", ledger.Meaning(r))
	t.row("attempts", strconv.Itoa(r.Attempts))
	t.row("arguments", orDash(string(r.Arguments)))
	t.row("fingerprint", r.Fingerprint)
	t.row("created", timeText(r.CreatedAt))
	t.row("updated", timeText(r.UpdatedAt))
	t.row("expires", timeText(r.ExpiresAt))
	if r.Owner != "" {
		t.row("owner", r.Owner)
	}
	if r.State.Waiting() && !r.LeaseUntil.IsZero() {
		t.row("lease until", timeText(r.LeaseUntil))
	}
	if ap := r.Approval; ap != nil {
		t.row("approval", ap.Text())
	}
	if r.ErrorKind != "" || r.ErrorMessage != "" {
		t.row("error", fmt.Sprintf("%s: %s", orDash(r.ErrorKind), r.ErrorMessage))
	}
	showFindings(t, r)
	if r.TraceID != "" {
		t.row("trace", r.TraceID)
	}
	if r.Tombstone {
		t.row("tombstone", "yes: only the key and fingerprint remain")
	}
	res, err := decodeResult(r.Result)
	switch {
	case err != nil:
		t.row("result", clip(string(r.Result), 200))
	case res != nil:
		text := resultText(res)
		if r.Compacted {
			text = "(compacted) " + text
		}
		t.row("result", clip(text, 200))
	}
	return a.flushTable(t)
}

// showFindings adds the record's reconciliation: the resolution that
// settled it, every attempt kept (oldest first), and when the next
// background attempt on an UNKNOWN record is due.
func showFindings(t *table, r *ledger.Record) {
	if r.Reconciled != nil {
		t.row("reconciled", clip(r.Reconciled.Text(), 200))
	}
	if r.FindingCount == 0 {
		return
	}
	count := strconv.Itoa(r.FindingCount)
	if len(r.Findings) < r.FindingCount {
		count += fmt.Sprintf(" (the last %d below)", len(r.Findings))
	}
	t.row("findings", count)
	for _, f := range r.Findings {
		t.row("finding", clip(f.Text(), 200))
	}
	if ledger.RowOf(r.State).Act == ledger.ActReconcile && !r.ReconcileAt.IsZero() {
		t.row("next attempt", timeText(r.ReconcileAt))
	}
}

package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerReconcileCmd) }

// KindReconciled is the ErrorKind of a record a person reconciled; its
// ErrorMessage says who, when and the note.
const kindReconciled = ledger.KindReconciled

func newLedgerReconcileCmd(a *app) *cobra.Command {
	var as, note, tool string
	c := &cobra.Command{
		Use:   "reconcile KEY --as succeeded|failed [--note TEXT] [--tool T]",
		Short: "Settle an UNKNOWN record after checking what really happened",
		Long: `reconcile settles an UNKNOWN record as SUCCEEDED or FAILED once a person has
checked at the server whether the call took effect.

The record keeps the note: its error kind becomes "reconciled" and its error
message says who reconciled it, when, and the note. Because a record that no
tool returned has no result, reconcile stores one text result that says the
same, so a later replay of the operation tells the model what a person
decided (isError is set for --as failed).`,
		Args: usageArgs(1, 1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			var to ledger.State
			switch strings.ToLower(as) {
			case "succeeded":
				to = ledger.StateSucceeded
			case "failed":
				to = ledger.StateFailed
			default:
				return exitf(exitUsage, "--as %q: want --as succeeded or --as failed", as)
			}
			st, err := a.ledger(c.Context(), existing)
			if err != nil {
				return err
			}
			r, err := a.findByKey(c.Context(), st, args[0], tool, "")
			if err != nil {
				return err
			}
			if r.State != ledger.StateUnknown {
				return exitf(exitUsage, "record %s (%s) is %s; only UNKNOWN records are reconciled", r.Key, r.Tool, r.State)
			}
			done, err := client.Reconcile(c.Context(), st, r.ID, client.Reconciliation{As: to, By: a.who(), Note: note})
			if errors.Is(err, ledger.ErrStateChanged) {
				return exitf(exitUsage, "record %s changed while reconciling it; look again with agentctl ledger show %s", r.Key, r.Key)
			}
			if err != nil {
				return err
			}
			telemetry.NewResolutions(nil).Resolved(c.Context(), r, done, ledger.MethodPerson)
			if a.json {
				return a.printJSON(done)
			}
			a.printf("%s %s: %s -> %s\n", done.Tool, done.Key, ledger.StateUnknown, done.State)
			return nil
		}),
	}
	c.Flags().StringVar(&as, "as", "", "what happened: `succeeded|failed` (required)")
	completeWords(c, "as", "succeeded", "failed")
	c.Flags().StringVar(&note, "note", "", "why: what was checked (`TEXT`, kept on the record)")
	c.Flags().StringVar(&tool, "tool", "", "the record's `TOOL`, when several tools used the key")
	return c
}

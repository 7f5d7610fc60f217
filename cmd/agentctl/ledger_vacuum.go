package main

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerVacuumCmd) }

func newLedgerVacuumCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "vacuum",
		Short: "Give the space of purged records back to the disk (SQLite)",
		Long: `vacuum rewrites a SQLite ledger without the free pages that purges left
behind, so the file shrinks; then it truncates the write-ahead log. A purge
alone keeps the file's size: the next writes reuse its free pages.

It holds the ledger's write lock while it runs (about a second per 100 MB
of ledger), so calls wait meanwhile: run it after a large purge, when
calls are few. It needs free disk space about the ledger's size.

A PostgreSQL ledger needs no vacuum command: autovacuum reuses the space,
and VACUUM FULL (run by hand, with its lock) gives it back.`,
		Example: `  agentctl ledger purge --older-than 30d --yes && agentctl ledger vacuum`,
		Args:    usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			st, err := a.ledger(c.Context(), existing)
			if err != nil {
				return err
			}
			v, ok := ledger.Unwrap(st).(ledger.Vacuumer)
			if !ok {
				return exitf(exitUsage, "this ledger has no vacuum command: PostgreSQL's autovacuum reuses the space; run VACUUM FULL by hand to give it back")
			}
			began := time.Now()
			got, err := v.Vacuum(c.Context())
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]int64{"before": got.Before, "after": got.After})
			}
			a.printf("vacuumed in %s: %s before, %s after (%s given back)\n", time.Since(began).Round(time.Millisecond),
				sizeText(got.Before), sizeText(got.After), sizeText(got.Before-got.After))
			return nil
		}),
	}
}

// sizeText is n bytes for a person: 1.5 MB, 880 MB, 2.1 GB.
func sizeText(n int64) string {
	const unit = 1000
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, i := float64(n), 0
	for f >= unit && i < 3 {
		f /= unit
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + []string{"B", "kB", "MB", "GB"}[i]
}

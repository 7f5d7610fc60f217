package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerPurgeCmd) }

func newLedgerPurgeCmd(a *app) *cobra.Command {
	var olderThan string
	var force bool
	c := &cobra.Command{
		Use:   "purge [--older-than DURATION [--force]]",
		Short: "Remove settled records past their retention or older than DURATION",
		Long: `purge removes settled records (SUCCEEDED, FAILED, DENIED, RETRYABLE) whose
retention has ended, and with --older-than those last updated longer ago than
DURATION (Go durations such as 90m or 36h, or days such as 7d). UNKNOWN,
PROCESSING and PENDING_APPROVAL records are never purged. A tool under the
"verify" reuse policy keeps a tombstone of key and fingerprint.

Purge is maintenance of the whole ledger: it applies to every tenant.

A record younger than the default retention (24h) is what answers an agent
that retries a call: purged, the retry runs the call again. --older-than
below 24h is therefore refused unless --force says so.`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			now := time.Now()
			req := ledger.PurgeRequest{ExpiredBy: now}
			if olderThan != "" {
				d, err := parseAge(olderThan)
				if err != nil {
					return err
				}
				if d < ledger.DefaultRetention && !force {
					return exitf(exitUsage, "--older-than %s would purge settled records younger than the default retention (%s), which answer an agent's retries; their calls would run again; pass --older-than %s or more, or add --force", olderThan, strings.TrimSuffix(ledger.DefaultRetention.String(), "0m0s"), strings.TrimSuffix(ledger.DefaultRetention.String(), "0m0s"))
				}
				req.UpdatedBefore = now.Add(-d)
			}
			st, err := a.ledger(c.Context(), existing)
			if err != nil {
				return err
			}
			n, err := st.Purge(c.Context(), req)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]int{"purged": n})
			}
			fmt.Fprintf(a.io.Out, "purged %d records\n", n)
			return nil
		}),
	}
	c.Flags().StringVar(&olderThan, "older-than", "", "also purge settled records last updated more than `DURATION` ago (e.g. 36h, 7d)")
	c.Flags().BoolVar(&force, "force", false, "allow --older-than below the default retention (24h)")
	return c
}

// parseAge parses a Go duration, or a whole number of days written "7d".
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n >= 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, exitf(exitUsage, "--older-than %q: want a duration such as 90m, 36h or 7d", s)
	}
	return d, nil
}

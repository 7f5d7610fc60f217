package main

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerListCmd) }

func newLedgerListCmd(a *app) *cobra.Command {
	var (
		session, state, tool string
		limit                int
	)
	c := &cobra.Command{
		Use:   "list [--layer L] [--session S] [--state STATE] [--tool T] [--limit N]",
		Short: "List the tenant's records, newest first",
		Args:  usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			f := ledger.Filter{Tenant: a.tenant, Layer: a.layer, Session: session, Tool: tool}
			if state != "" {
				s, err := ledger.ParseState(state)
				if err != nil {
					return exitf(exitUsage, "--state %q: want one of %v", state, ledger.States)
				}
				f.State = s
			}
			if limit < 0 {
				return exitf(exitUsage, "--limit %d: want a positive number of records, or 0 for all", limit)
			}
			st, err := a.ledger(c.Context(), readOnly)
			if err != nil {
				return err
			}
			records, more, err := listRecords(c, st, f, limit)
			if err != nil {
				return err
			}
			if a.json {
				for _, r := range records {
					if err := a.printJSON(r); err != nil {
						return err
					}
				}
				return nil
			}
			t := newTable(a.io.Out, a.colour(), "CREATED", "LAYER", "TOOL", "KEY", "STATE", "ATTEMPTS", "SESSION").keep(0, 1, 4, 5).giveUpFirst(6, 1)
			for _, r := range records {
				t.row(timeText(r.CreatedAt), layerText(r.Layer), r.Tool, r.Key, t.paint(stateColour(r.State), string(r.State)),
					strconv.Itoa(r.Attempts), orDash(r.Session))
			}
			if err := a.flushTable(t); err != nil {
				return err
			}
			if n := encryptedCount(records); n > 0 {
				a.eprintf("%d records show [encrypted] arguments or results: %s\n", n, a.whyEncrypted(c.Context(), st, records))
			}
			if more {
				a.eprintf("more records: raise --limit (0 for all)\n")
			}
			return nil
		}),
	}
	c.Flags().StringVar(&session, "session", "", "only records of this `SESSION`")
	c.Flags().StringVar(&state, "state", "", "only records in this `STATE` (e.g. unknown, succeeded)")
	c.Flags().StringVar(&tool, "tool", "", "only records of this `TOOL`")
	completeWords(c, "state", stateNames()...)
	c.Flags().IntVar(&limit, "limit", ledger.DefaultPageSize, "show at most `N` records; 0 for all")
	return c
}

func stateNames() []string {
	names := make([]string, len(ledger.States))
	for i, s := range ledger.States {
		names[i] = strings.ToLower(string(s))
	}
	return names
}

// listRecords pages through the Store until limit records (all when 0) and
// reports whether more remain.
func listRecords(c *cobra.Command, st ledger.Store, f ledger.Filter, limit int) ([]*ledger.Record, bool, error) {
	var out []*ledger.Record
	for {
		f.Limit = ledger.MaxPageSize
		if limit > 0 {
			f.Limit = min(limit-len(out), ledger.MaxPageSize)
		}
		page, err := st.List(c.Context(), f)
		if err != nil {
			return nil, false, err
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out, false, nil
		}
		if limit > 0 && len(out) >= limit {
			return out, true, nil
		}
		f.Cursor = page.Next
	}
}

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
		session, state, tool, cursor string
		limit                        int
	)
	c := &cobra.Command{
		Use:   "list [--layer L] [--session S] [--state STATE] [--tool T] [--limit N] [--cursor C]",
		Short: "List the tenant's records, newest first, a page at a time",
		Long: `list shows the tenant's records newest first, --limit at a time (50 by
default). When more follow, it prints the cursor of the next page on stderr:
pass it as --cursor (or --after) with the same filters to see the next page.
A cursor is a position in the list, so records added meanwhile never shift
a page: none is shown twice or skipped.`,
		Example: `  agentctl ledger list
  agentctl ledger list --state unknown --tool create_payment --limit 20
  agentctl ledger list --limit 20 --cursor CURSOR`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			f := ledger.Filter{Tenant: a.tenant, Layer: a.layer, Session: session, Tool: tool, Cursor: cursor}
			if cursor != "" {
				if _, err := ledger.DecodeCursor(cursor); err != nil {
					return exitf(exitUsage, "--cursor %q: %v; pass the cursor a previous page printed", cursor, err)
				}
			}
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
			if a.json {
				// One page at a time: --limit 0 streams a ledger of any
				// size at the memory of one page.
				next, err := eachRecord(c, st, f, limit, a.printJSON)
				if err != nil {
					return err
				}
				if next != "" {
					a.eprintf("next page: --cursor %s\n", next)
				}
				return nil
			}
			records, next, err := listRecords(c, st, f, limit)
			if err != nil {
				return err
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
			if next != "" {
				a.eprintf("more records; next page: agentctl ledger list --cursor %s (with the same filters)\n", next)
			}
			return nil
		}),
	}
	c.Flags().StringVar(&session, "session", "", "only records of this `SESSION`")
	c.Flags().StringVar(&state, "state", "", "only records in this `STATE` (e.g. unknown, succeeded)")
	c.Flags().StringVar(&tool, "tool", "", "only records of this `TOOL`")
	completeWords(c, "state", stateNames()...)
	c.Flags().IntVar(&limit, "limit", ledger.DefaultPageSize, "show at most `N` records; 0 for all")
	c.Flags().StringVar(&cursor, "cursor", "", "start after the records a previous page showed: the `CURSOR` it printed")
	c.Flags().StringVar(&cursor, "after", "", "the same as --cursor")
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
// returns the cursor of the records after them ("" when none remain).
func listRecords(c *cobra.Command, st ledger.Store, f ledger.Filter, limit int) ([]*ledger.Record, string, error) {
	var out []*ledger.Record
	next, err := eachRecord(c, st, f, limit, func(r any) error {
		out = append(out, r.(*ledger.Record))
		return nil
	})
	return out, next, err
}

// eachRecord pages through the Store, giving fn each record until limit
// records (all when 0), and returns the cursor of the records after them
// ("" when none remain).
func eachRecord(c *cobra.Command, st ledger.Store, f ledger.Filter, limit int, fn func(any) error) (string, error) {
	n := 0
	for {
		f.Limit = ledger.DefaultPageSize * 4
		if limit > 0 {
			f.Limit = min(limit-n, f.Limit)
		}
		page, err := st.List(c.Context(), f)
		if err != nil {
			return "", err
		}
		for _, r := range page.Records {
			if err := fn(r); err != nil {
				return "", err
			}
		}
		n += len(page.Records)
		if page.Next == "" {
			return "", nil
		}
		if limit > 0 && n >= limit {
			return page.Next, nil
		}
		f.Cursor = page.Next
	}
}

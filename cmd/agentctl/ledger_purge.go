package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/period"
	"github.com/mcpledger/mcpledger/ledger"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerPurgeCmd) }

func newLedgerPurgeCmd(a *app) *cobra.Command {
	var f purgeFlags
	c := &cobra.Command{
		Use:   "purge [--older-than DURATION [--force]] [--events-older-than DURATION] [--dry-run] [--yes]",
		Short: "Remove settled records past their retention or older than DURATION",
		Long: `purge removes settled records (SUCCEEDED, FAILED, DENIED, RETRYABLE,
REJECTED) whose retention has ended, and with --older-than those last
updated longer ago than DURATION (Go durations such as 90m or 36h, or days
such as 7d). UNKNOWN, PROCESSING and PENDING_APPROVAL records are never
purged. A tool under the "verify" reuse policy keeps a tombstone of key and
fingerprint.

Purge is maintenance of the whole ledger: it applies to every tenant.

--dry-run shows what would go (a count per state, the oldest and newest)
and deletes nothing. On a terminal, purge shows the same and asks before it
deletes; --yes answers yes. With stdin not a terminal (a script, cron) it
purges without asking and prints what it purged.

A record younger than the default retention (24h) is what answers an agent
that retries a call: purged, the retry runs the call again. --older-than
below 24h is therefore refused unless --force says so.

The events behind agentctl ledger stats have their own retention: purge
also deletes the events older than --events-older-than (default 7d, the
proxy's and the telemetry package's default too; 0 keeps them all).

Purge deletes in short batches and leaves the ledger free between them, so
calls of a running proxy or agent are not held up behind it; it prints how
many records it removed per second. On SQLite the space freed goes back to
the file's free pages; agentctl ledger vacuum gives it back to the disk.`,
		Example: `  agentctl ledger purge --dry-run
  agentctl ledger purge --older-than 30d --yes`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			return a.purge(c.Context(), &f)
		}),
	}
	c.Flags().StringVar(&f.olderThan, "older-than", "", "also purge settled records last updated more than `DURATION` ago (e.g. 36h, 7d)")
	c.Flags().BoolVar(&f.force, "force", false, "allow --older-than below the default retention (24h)")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would be purged, and purge nothing")
	c.Flags().BoolVar(&f.yes, "yes", false, "purge without asking on a terminal")
	c.Flags().StringVar(&f.eventsOlderThan, "events-older-than", "7d", "also delete the statistics events older than `DURATION`; 0 keeps them")
	return c
}

type purgeFlags struct {
	olderThan          string
	eventsOlderThan    string
	force, dryRun, yes bool
}

// dryRunJSON is the --json shape of purge --dry-run; purge itself prints
// {"purged": N}.
type dryRunJSON struct {
	DryRun  bool                 `json:"dryRun"`
	Records int                  `json:"records"`
	ByState map[ledger.State]int `json:"byState"`
	Oldest  *time.Time           `json:"oldest,omitempty"`
	Newest  *time.Time           `json:"newest,omitempty"`
}

func (a *app) purge(ctx context.Context, f *purgeFlags) error {
	now := time.Now()
	req := ledger.PurgeRequest{ExpiredBy: now}
	var eventsAge time.Duration
	if f.eventsOlderThan != "0" {
		d, err := parseAge(f.eventsOlderThan)
		if err != nil {
			return exitf(exitUsage, "--events-older-than %q: want a duration such as 36h or 7d, or 0 to keep the events", f.eventsOlderThan)
		}
		eventsAge = d
	}
	if f.olderThan != "" {
		d, err := parseAge(f.olderThan)
		if err != nil {
			return err
		}
		if d < ledger.DefaultRetention && !f.force {
			return exitf(exitUsage, "--older-than %s would purge settled records younger than the default retention (%s), which answer an agent's retries; their calls would run again; pass --older-than %s or more, or add --force", f.olderThan, dayText(ledger.DefaultRetention), dayText(ledger.DefaultRetention))
		}
		req.UpdatedBefore = now.Add(-d)
	}
	mode := existing
	if f.dryRun {
		mode = readOnly
	}
	st, err := a.ledger(ctx, mode)
	if err != nil {
		return err
	}
	// Asking needs a person at stdin; a script purges as it always has.
	ask := !f.dryRun && !f.yes && stdinKind(a.io.In) == stdinTerminal
	var pv ledger.PurgePreview
	if f.dryRun || ask {
		pp, ok := ledger.Unwrap(st).(ledger.PurgePreviewer)
		if !ok {
			return exitf(exitUsage, "this ledger cannot say what a purge would remove; run agentctl ledger purge --yes to purge without asking")
		}
		if pv, err = pp.PurgePreview(ctx, req); err != nil {
			return err
		}
	}
	if f.dryRun {
		return a.printPurge(pv, pv.Total(), true)
	}
	if ask {
		if pv.Total() == 0 {
			return a.printPurge(pv, 0, false)
		}
		a.eprintf("%s", previewText(pv))
		a.eprintf("purge these %d records? [y/N] ", pv.Total())
		answer, err := readAnswer(ctx, a.io.In)
		if ctx.Err() != nil {
			a.eprintln()
			return exitf(exitInterrupted, "interrupted at the question; nothing purged; run it again to be asked again, or pass --yes")
		}
		if err != nil && answer == "" {
			return exitf(exitInterrupted, "nothing purged: no answer came (stdin closed); run it again and answer y, or pass --yes")
		}
		if word := strings.ToLower(strings.TrimSpace(answer)); word != "y" && word != "yes" {
			a.eprintf("nothing purged: the answer was %q, not y; run it again and answer y, or pass --yes\n", shorten(strings.TrimSpace(answer), 20))
			return nil
		}
	}
	// The same request as the preview's, so the purge takes what the
	// count said (less whatever changed state meanwhile).
	began := time.Now()
	n, err := st.Purge(ctx, req)
	if err != nil {
		return err
	}
	took := time.Since(began)
	events := 0
	if el, ok := st.(ledger.EventLog); ok && eventsAge > 0 {
		if events, err = el.PurgeEvents(ctx, now.Add(-eventsAge)); err != nil {
			return err
		}
	}
	if a.json {
		return a.printJSON(map[string]int{"purged": n, "perSecond": perSecond(n, took), "events": events})
	}
	if n == 0 {
		if err := a.printPurge(pv, 0, false); err != nil {
			return err
		}
	} else {
		a.printf("purged %d records in %s (%d records/s)\n", n, took.Round(time.Millisecond), perSecond(n, took))
	}
	if events > 0 {
		a.printf("purged %d events older than %s\n", events, f.eventsOlderThan)
	}
	return nil
}

// perSecond is n per second over d.
func perSecond(n int, d time.Duration) int {
	if d <= 0 {
		return n
	}
	return int(float64(n) / d.Seconds())
}

// readAnswer reads one line from in, or gives up when ctx ends (Ctrl-C
// at the question: the signal is the context's, the read would block).
func readAnswer(ctx context.Context, in io.Reader) (string, error) {
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		s, err := bufio.NewReader(in).ReadString('\n')
		got <- line{s, err}
	}()
	select {
	case l := <-got:
		return l.s, l.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// printPurge says what was purged, or with dryRun what would be.
func (a *app) printPurge(pv ledger.PurgePreview, n int, dryRun bool) error {
	switch {
	case a.json && dryRun:
		j := dryRunJSON{DryRun: true, Records: n, ByState: pv.ByState}
		if j.ByState == nil {
			j.ByState = map[ledger.State]int{}
		}
		if !pv.Oldest.IsZero() {
			j.Oldest, j.Newest = &pv.Oldest, &pv.Newest
		}
		return a.printJSON(j)
	case a.json:
		return a.printJSON(map[string]int{"purged": n})
	}
	switch {
	case dryRun && n == 0:
		a.println("nothing to purge: no settled record is past its retention")
	case dryRun:
		a.printf("%s", previewText(pv))
		a.println("nothing was deleted; run it without --dry-run to purge them")
	default:
		a.printf("purged %d records\n", n)
	}
	return nil
}

// previewText lists what a purge takes: how many, when they were made,
// and a line per state.
func previewText(pv ledger.PurgePreview) string {
	var b strings.Builder
	fmt.Fprintf(&b, "would purge %d records, created %s to %s:\n", pv.Total(), timeText(pv.Oldest), timeText(pv.Newest))
	for _, s := range ledger.States {
		if n := pv.ByState[s]; n > 0 {
			fmt.Fprintf(&b, "  %-10s %6d\n", s, n)
		}
	}
	return b.String()
}

// dayText writes 24h as 24h, not 24h0m0s.
func dayText(d time.Duration) string {
	return strings.TrimSuffix(d.String(), "0m0s")
}

// parseAge parses a Go duration, or a whole number of days written "7d".
func parseAge(s string) (time.Duration, error) {
	d, err := period.Parse(s)
	if err != nil {
		return 0, exitf(exitUsage, "--older-than %q: want a duration such as 90m, 36h or 7d", s)
	}
	return d, nil
}

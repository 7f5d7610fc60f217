package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/period"
	"github.com/mcpledger/mcpledger/ledger"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerStatsCmd) }

// statsOutput is one --json object of ledger stats. Latencies are in
// seconds, the unit of the metrics.
type statsOutput struct {
	Tenant               string    `json:"tenant"`
	Since                time.Time `json:"since"`
	Side                 string    `json:"side,omitempty"`
	Calls                int64     `json:"calls"`
	DuplicateHits        int64     `json:"duplicateHits"`
	DuplicateHitRate     float64   `json:"duplicateHitRate"`
	KeyConflicts         int64     `json:"keyConflicts"`
	KeyConflictRate      float64   `json:"keyConflictRate"`
	InProgressWaits      int64     `json:"inProgressWaits"`
	InProgressTimeouts   int64     `json:"inProgressTimeouts"`
	Unknown              int64     `json:"unknown"`
	DownstreamDuplicates int64     `json:"downstreamDuplicates"`
	ReplayP50Seconds     float64   `json:"replayP50Seconds"`
	ReplayP99Seconds     float64   `json:"replayP99Seconds"`
}

func newLedgerStatsCmd(a *app) *cobra.Command {
	var since, side string
	c := &cobra.Command{
		Use:   "stats [--since DURATION] [--side client|server]",
		Short: "Show the ledger's figures for a period: duplicate hits, conflicts, waits, UNKNOWN, replay latency",
		Long: `stats reads the call events that clients and servers store in the ledger
(metrics live only as long as their process) and prints, for the period:
the duplicate hit rate (calls answered by a replay), the key conflict rate
(keys reused with other arguments), in-progress waits and timeouts, the
records that entered UNKNOWN and are still unresolved, the duplicates a
server stopped before its handler, and replay latency p50 and p99
(nearest rank). Rates are per call of the period.`,
		Example: `  agentctl ledger stats
  agentctl ledger stats --since 7d --side server --json`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			period, err := parsePeriod(since)
			if err != nil {
				return err
			}
			q := ledger.StatsQuery{Tenant: a.tenant, Since: time.Now().Add(-period).UTC(), Side: ledger.Side(side)}
			if q.Side != "" && q.Side != ledger.SideClient && q.Side != ledger.SideServer {
				return exitf(exitUsage, "--side %q: want client or server, or leave it out for both", side)
			}
			// A ledger that does not exist yet has recorded nothing: its
			// figures are zeros, not an error.
			var s ledger.Stats
			st, err := a.ledger(c.Context(), readOnly)
			if _, none := errors.AsType[noLedger](err); !none {
				if err != nil {
					return err
				}
				el, ok := st.(ledger.EventLog)
				if !ok {
					return exitf(exitUsage, "this ledger keeps no call events, so it has no stats")
				}
				if s, err = el.Stats(c.Context(), q); err != nil {
					return err
				}
			}
			out := statsOutput{
				Tenant: q.Tenant, Since: q.Since, Side: side,
				Calls: s.Calls, DuplicateHits: s.DuplicateHits, DuplicateHitRate: s.DuplicateHitRate(),
				KeyConflicts: s.KeyConflicts, KeyConflictRate: s.KeyConflictRate(),
				InProgressWaits: s.InProgressWaits, InProgressTimeouts: s.InProgressTimeouts,
				Unknown: s.Unknown, DownstreamDuplicates: s.DownstreamDuplicates,
				ReplayP50Seconds: s.ReplayP50.Seconds(), ReplayP99Seconds: s.ReplayP99.Seconds(),
			}
			if a.json {
				return a.printJSON(out)
			}
			return a.printStats(out, period, s)
		}),
	}
	c.Flags().StringVar(&since, "since", "24h", "the period, back from now: a Go `DURATION` (90m, 24h) or days (7d)")
	c.Flags().StringVar(&side, "side", "", "only the events of one side: client (agents) or server (guarded servers)")
	return c
}

func (a *app) printStats(o statsOutput, period time.Duration, s ledger.Stats) error {
	sides := "client and server"
	if o.Side != "" {
		sides = o.Side
	}
	t := newTable(a.io.Out, a.colour(), "FIGURE", "VALUE").keep(0)
	rows := [][2]string{
		{"period", fmt.Sprintf("last %s, since %s (%s)", periodText(period), timeText(o.Since), sides)},
		{"calls", strconv.FormatInt(o.Calls, 10)},
		{"duplicate hit rate", rateText(o.DuplicateHitRate, o.DuplicateHits)},
		{"key conflict rate", rateText(o.KeyConflictRate, o.KeyConflicts)},
		{"in-progress waits", strconv.FormatInt(o.InProgressWaits, 10)},
		{"in-progress timeouts", strconv.FormatInt(o.InProgressTimeouts, 10)},
		{"UNKNOWN records", strconv.FormatInt(o.Unknown, 10)},
		{"downstream duplicates rejected", strconv.FormatInt(o.DownstreamDuplicates, 10)},
		{"replay latency p50", latencyText(s.ReplayP50, o.DuplicateHits)},
		{"replay latency p99", latencyText(s.ReplayP99, o.DuplicateHits)},
	}
	for _, r := range rows {
		cell := r[1]
		if r[0] == "UNKNOWN records" && o.Unknown > 0 {
			cell = t.paint(stateColour(ledger.StateUnknown), cell)
		}
		t.row(r[0], cell)
	}
	return a.flushTable(t)
}

// parsePeriod reads --since: a Go duration, or a whole number of days.
func parsePeriod(s string) (time.Duration, error) {
	d, err := period.Parse(s)
	if err != nil || d <= 0 {
		return 0, exitf(exitUsage, "--since %q: want a positive duration such as 90m, 24h or 7d", s)
	}
	return d, nil
}

func periodText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

func rateText(rate float64, n int64) string {
	return fmt.Sprintf("%.2f%% (%d)", 100*rate, n)
}

// latencyText shows a latency rounded to a readable precision, or "-"
// when there was no replay to measure.
func latencyText(d time.Duration, replays int64) string {
	if replays == 0 {
		return "-"
	}
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

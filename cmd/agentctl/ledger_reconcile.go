package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
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

// reconcileAs maps the words of --as to the state a person's finding
// settles an UNKNOWN record in.
var reconcileAs = map[string]ledger.State{
	"succeeded": ledger.StateSucceeded,
	"failed":    ledger.StateFailed,
	"not_run":   ledger.StateRetryable,
}

func newLedgerReconcileCmd(a *app) *cobra.Command {
	var as, note, tool, resultFile string
	var auto bool
	af := &autoFlags{}
	c := &cobra.Command{
		Use:   "reconcile (KEY --as succeeded|failed|not_run [--note TEXT] [--result-file F] | --auto [--watch] --server 'CMD' | --url URL [--policy FILE]) [--tool T]",
		Short: "Settle an UNKNOWN record after checking what really happened, or settle the due ones automatically",
		Long: `reconcile settles an UNKNOWN record once a person has checked at the server
whether the call took effect:

  --as succeeded   it took effect: later calls with the key get its result
  --as failed      the tool refused it: later calls get that refusal
  --as not_run     it provably never took effect: the next call with the
                   key runs it

The record keeps the resolution: who (your OS account), when, and the note as
the evidence, beside every earlier reconciliation attempt (agentctl ledger
show KEY). --result-file gives the result later calls get back, a
CallToolResult as JSON (for example what the server's own lookup returned);
without it, reconcile stores one text result that says who reconciled it and
the note (isError for --as failed).

--auto settles, without a person, the tenant's UNKNOWN records (of the client
and proxy layers, or of --layer) that are due for an attempt, at the server
named by --server 'CMD' or --url URL: a server that honours keys gets the call
again with its key and answers with its first execution (method resend); for
another server, the probe the policy (--policy) names for the record's tool is
asked (method probe): found settles it SUCCEEDED with the probe's answer;
absent settles it not_run (RETRYABLE: the next call with the key runs it) only
once the probe's quiet period has passed since the call, else it stays
UNKNOWN and comes due again later, with a growing backoff. At most --limit
records a pass, the earliest due first; a line for each (key, tool, verdict,
method, state) and a summary. It exits 0 once the pass ran, whatever remains
UNKNOWN (as ledger list does: list them with --state UNKNOWN); 2 for bad usage,
5 when the server or the ledger cannot be reached. --watch runs a pass again
when the earliest record left UNKNOWN comes due, at most --every apart, until
SIGINT or SIGTERM, which end it with exit 0.`,
		Example: `  agentctl ledger reconcile order-42 --as succeeded --note "bank statement"
  agentctl ledger reconcile --auto --server 'go run ./examples/payments'`,
		Args: usageArgs(0, 1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			if auto {
				if len(args) > 0 || as != "" || note != "" || resultFile != "" {
					return exitf(exitUsage, "--auto settles every due UNKNOWN record on the server's evidence; drop KEY, --as, --note and --result-file (or drop --auto to reconcile one record by hand)")
				}
				af.up.getenv = a.getenv
				return a.reconcileAuto(c.Context(), af, tool)
			}
			if af.watch {
				return exitf(exitUsage, "--watch repeats --auto; pass --auto too")
			}
			if len(args) != 1 {
				return exitf(exitUsage, "name the record's KEY with --as succeeded|failed|not_run, or pass --auto with --server or --url to settle the due ones by the server's evidence")
			}
			to, ok := reconcileAs[strings.ToLower(as)]
			if !ok {
				return exitf(exitUsage, "--as %q: want --as succeeded, --as failed or --as not_run", as)
			}
			var result any
			if resultFile != "" {
				if ledger.RowOf(to).Ran == ledger.RanNo {
					return exitf(exitUsage, "--result-file with --as not_run: a call that never took effect has no result; drop --result-file")
				}
				raw, err := readResultFile(resultFile)
				if err != nil {
					return err
				}
				result = raw
			}
			st, err := a.ledger(c.Context(), existing)
			if err != nil {
				return err
			}
			r, err := a.findByKey(c.Context(), st, args[0], tool, "")
			if err != nil {
				return err
			}
			if ledger.RowOf(r.State).Act != ledger.ActReconcile {
				return exitf(exitUsage, "record %s (%s) is %s; only UNKNOWN records are reconciled", r.Key, r.Tool, r.State)
			}
			done, err := client.Reconcile(c.Context(), st, r.ID, client.Reconciliation{As: to, By: a.who(), Note: note, Result: result})
			if errors.Is(err, ledger.ErrStateChanged) || errors.Is(err, ledger.ErrLeaseLost) {
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
	c.Flags().StringVar(&as, "as", "", "what happened: `succeeded|failed|not_run` (required)")
	completeWords(c, "as", "succeeded", "failed", "not_run")
	c.Flags().StringVar(&note, "note", "", "why: what was checked (`TEXT`, kept on the record)")
	c.Flags().StringVar(&resultFile, "result-file", "", "the result later calls get back: a CallToolResult as JSON in `FILE`")
	c.Flags().StringVar(&tool, "tool", "", "the record's `TOOL`, when several tools used the key; with --auto, only this tool's records")
	c.Flags().BoolVar(&auto, "auto", false, "settle the due UNKNOWN records by the server's evidence: a re-send to a server that honours keys, else the policy's probe")
	c.Flags().BoolVar(&af.watch, "watch", false, "with --auto: run passes until interrupted, the next when a record comes due")
	c.Flags().DurationVar(&af.every, "every", defaultAutoEvery, "with --watch: the longest `DURATION` between passes")
	c.Flags().IntVar(&af.limit, "limit", defaultAutoLimit, "with --auto: the most records `N` one pass settles")
	af.up.flags(c)
	a.policyFlag(c, &af.policy)
	return c
}

// maxResultFile bounds --result-file: a result past the ledger's own
// compaction limit is not a person's hand-written answer.
const maxResultFile = ledger.DefaultMaxResult

// readResultFile reads a CallToolResult as JSON from name.
func readResultFile(name string) (json.RawMessage, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, exitf(exitUsage, "--result-file %s: %v; pass a file holding a CallToolResult as JSON", shorten(name, 80), err)
	}
	if len(b) > maxResultFile {
		return nil, exitf(exitUsage, "--result-file %s holds %d bytes; the limit is %d, so keep what later calls need (the created resource's id)", shorten(name, 80), len(b), maxResultFile)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, exitf(exitUsage, "--result-file %s is not a JSON object; want a CallToolResult such as {\"content\":[{\"type\":\"text\",\"text\":\"paid\"}]}", shorten(name, 80))
	}
	if _, err := decodeResult(b); err != nil {
		return nil, exitf(exitUsage, "--result-file %s: %v; want a CallToolResult such as {\"content\":[{\"type\":\"text\",\"text\":\"paid\"}]}", shorten(name, 80), err)
	}
	return json.RawMessage(b), nil
}

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/internal/audit"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerExportCmd) }

// exportVerified is the --json shape of export --verify.
type exportVerified struct {
	File    string `json:"file"`
	Intact  bool   `json:"intact"`
	Tenant  string `json:"tenant,omitempty"`
	Records int64  `json:"records"`
	Lines   int64  `json:"lines"`
	Head    string `json:"head,omitempty"`
	Line    int64  `json:"line,omitempty"` // the first line that does not hold
	Problem string `json:"problem,omitempty"`
}

func newLedgerExportCmd(a *app) *cobra.Command {
	var since, format, verify string
	c := &cobra.Command{
		Use:   "export [--since DURATION] [--format jsonl] | export --verify FILE",
		Short: "Write the tenant's records as a hash-chained audit file, or check one",
		Long: `export writes the tenant's records to stdout as JSON Lines, newest first: a
header line, one line per record (with its timeline) and an end line. Every
line carries the SHA-256 of the line before it, so a changed, removed, added
or reordered line breaks the chain where it happened. Arguments and results
are redacted.

export --verify FILE checks such a file: it says it is intact (exit 0) and
prints the hash of its last line, or names the first line that does not hold
(exit 1). Keep the printed hash apart from the file to detect a rewrite of
the whole file.`,
		Example: `  agentctl ledger export --since 7d > audit.jsonl
  agentctl ledger export --verify audit.jsonl`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			if verify != "" {
				if c.Flags().Changed("since") || c.Flags().Changed("format") {
					return exitf(exitUsage, "--verify checks a file and takes no --since or --format; run them apart")
				}
				return a.verifyExport(verify)
			}
			if format != "jsonl" {
				return exitf(exitUsage, "--format %q: the only format is jsonl", format)
			}
			var from time.Time
			if since != "" {
				period, err := parsePeriod(since)
				if err != nil {
					return err
				}
				from = time.Now().Add(-period).UTC()
			}
			st, err := a.ledger(c.Context(), readOnly)
			if err != nil {
				return err
			}
			n, err := audit.Export(c.Context(), st, a.io.Out, audit.Options{Tenant: a.tenant, Layer: a.layer, Since: from})
			if err != nil {
				return withCode(exitUnreachable, fmt.Errorf("%w; the output is incomplete (no end line): run the export again", err))
			}
			fmt.Fprintf(a.io.Err, "exported %d record(s) of tenant %s; check the file with agentctl ledger export --verify FILE\n", n, a.tenant)
			return nil
		}),
	}
	fl := c.Flags()
	fl.StringVar(&since, "since", "", "only records created in this period back from now: a Go `DURATION` (90m, 24h) or days (7d); default all")
	fl.StringVar(&format, "format", "jsonl", "the output `FORMAT`: jsonl")
	completeWords(c, "format", "jsonl")
	fl.StringVar(&verify, "verify", "", "check the export `FILE` instead of writing one")
	return c
}

func (a *app) verifyExport(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return exitf(exitUsage, "cannot read %s: %v; pass the file agentctl ledger export wrote", path, err)
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	out := exportVerified{File: path, Intact: err == nil, Tenant: rep.Header.Tenant, Records: rep.Records, Lines: rep.Lines, Head: rep.Head}
	var broken *audit.Broken
	switch {
	case errors.As(err, &broken):
		out.Line, out.Problem, out.Head = broken.Line, broken.Why, ""
	case err != nil:
		return exitf(exitUsage, "cannot read %s: %v; pass the file agentctl ledger export wrote", path, err)
	}
	if a.json {
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else if broken == nil {
		fmt.Fprintf(a.io.Out, "%s: intact: %d record(s) of tenant %s in %d lines; last line's hash %s\n", path, rep.Records, rep.Header.Tenant, rep.Lines, rep.Head)
	}
	if broken != nil {
		return exitf(exitFailed, "%s is not intact: line %d: %s; compare it with the ledger (agentctl ledger show KEY) or a copy kept elsewhere", path, broken.Line, broken.Why)
	}
	return nil
}

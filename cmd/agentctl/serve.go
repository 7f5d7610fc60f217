package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/planner/ledgertools"
)

func init() { register(newServeCmd) }

func newServeCmd(a *app) *cobra.Command {
	var session string
	c := &cobra.Command{
		Use:   "serve [--session S]",
		Short: "Serve the ledger tools (ledger_status, ledger_list) over stdio to any MCP host",
		Long: `serve answers MCP over stdin and stdout with the ledger's read-only tools,
ledger_status and ledger_list, so a model can ask what happened to its calls.
It sees the records of --tenant and of one session: --session, else
MCPLEDGER_SESSION, else the session agentctl call uses in this shell.

A host configures it like any stdio server, for example:

  {"command": "agentctl", "args": ["serve", "--session", "my-agent"]}`,
		Example: `  agentctl serve
  agentctl serve --session support-bot`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			if session == "" {
				session = a.defaultSession()
			}
			a.busy.lasting = true // it serves until stopped
			st, err := a.ledger(c.Context(), readWrite)
			if err != nil {
				return err
			}
			srv := ledgertools.NewServer(st, a.tenant, session, nil)
			t := &mcp.IOTransport{Reader: io.NopCloser(a.io.In), Writer: nopWriteCloser{a.io.Out}}
			err = srv.Run(c.Context(), t)
			if err == nil || errors.Is(err, io.EOF) || c.Context().Err() != nil {
				// The host closed stdin or stopped agentctl: a normal end.
				return nil
			}
			return fmt.Errorf("serving the ledger tools: %w", err)
		}),
	}
	c.Flags().StringVar(&session, "session", "", "the `SESSION` whose records the tools show (default: MCPLEDGER_SESSION, else this shell's)")
	return c
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

package main

import (
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

// The --durability flag of the commands that record calls (call, proxy).
const (
	durableName     = "durable"
	writeBehindName = "write-behind"
)

// durabilityFlag adds --durability to c, read into *name.
func (a *app) durabilityFlag(c *cobra.Command, name *string) {
	c.Flags().StringVar(name, "durability", a.env("MCPLEDGER_DURABILITY", durableName),
		"how the ledger writes, as a `MODE`: durable (each write on disk before the call goes on) or write-behind "+
			"(claims on disk first, each outcome with the next write or within a short window: a machine crash there leaves the call UNKNOWN, never run twice) (env MCPLEDGER_DURABILITY)")
}

// parseDurability reads the value of --durability.
func parseDurability(name string) (ledger.Durability, error) {
	switch name {
	case durableName, "":
		return ledger.Durable, nil
	case writeBehindName:
		return ledger.WriteBehind, nil
	}
	return 0, exitf(exitUsage, "--durability (or MCPLEDGER_DURABILITY) %s: want durable or write-behind", shorten(name, 40))
}

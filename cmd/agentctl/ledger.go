package main

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

// ledgerCommands holds the "ledger" subcommands; each file adds its own.
var ledgerCommands []func(*app) *cobra.Command

func init() { register(newLedgerCmd) }

func newLedgerCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect, reconcile and purge the ledger's records",
		Args:  subcommandArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	for _, newCmd := range ledgerCommands {
		c.AddCommand(newCmd(a))
	}
	return c
}

// findByKey returns the tenant's record with key, of tool when tool is set.
// The Store identifies a record by (tenant, tool, key) and a person usually
// knows only the key, so without a tool the tenant's records are scanned; a
// key that more than one tool used is an error naming those tools.
func (a *app) findByKey(ctx context.Context, st ledger.Store, key, tool string, state ledger.State) (*ledger.Record, error) {
	if err := ledger.ValidateKey(key); err != nil {
		return nil, exitf(exitUsage, "%v; keys are printed by agentctl call and agentctl ledger list", err)
	}
	if tool != "" {
		r, err := st.Get(ctx, ledger.ID{Tenant: a.tenant, Tool: tool, Key: key})
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, exitf(exitUsage, "no record with key %s for tool %s in tenant %s; list records with agentctl ledger list", key, tool, a.tenant)
		}
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	var found []*ledger.Record
	f := ledger.Filter{Tenant: a.tenant, State: state, Limit: ledger.MaxPageSize}
	for {
		page, err := st.List(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Records {
			if r.Key == key {
				found = append(found, r)
			}
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	switch len(found) {
	case 0:
		return nil, exitf(exitUsage, "no record with key %s in tenant %s; list records with agentctl ledger list", key, a.tenant)
	case 1:
		return found[0], nil
	}
	tools := make([]string, 0, len(found))
	for _, r := range found {
		tools = append(tools, r.Tool)
	}
	slices.Sort(tools)
	return nil, exitf(exitUsage, "key %s names records of several tools (%s); pass --tool", key, strings.Join(tools, ", "))
}

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
		Example: `  agentctl ledger list --state unknown
  agentctl ledger show order-42`,
		Args: subcommandArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.PersistentFlags().StringVar(&a.layer, "layer", "", "only records of this `LAYER` (client, proxy, server): whose records they are in a shared ledger")
	completeWords(c, "layer", ledger.LayerClient, ledger.LayerProxy, ledger.LayerServer)
	for _, newCmd := range ledgerCommands {
		c.AddCommand(newCmd(a))
	}
	return c
}

// findByKey returns the tenant's record with key, of tool and layer when
// they are set. The Store identifies a record by (tenant, layer, tool, key)
// and a person usually knows only the key, so the records of the key are
// listed (an index lookup, however large the ledger); a key that names more
// than one record is an error naming their layers and tools.
func (a *app) findByKey(ctx context.Context, st ledger.Store, key, tool string, state ledger.State) (*ledger.Record, error) {
	found, err := a.findAllByKey(ctx, st, key, tool, state)
	if err != nil {
		return nil, err
	}
	if len(found) == 1 {
		return found[0], nil
	}
	layers := make([]string, 0, len(found))
	for _, r := range found {
		layers = append(layers, layerText(r.Layer))
	}
	slices.Sort(layers)
	return nil, exitf(exitUsage, "key %s names records of %s in several layers (%s); pass --layer to choose one", key, found[0].Tool, strings.Join(layers, ", "))
}

// findAllByKey returns every record of the tenant with key (of tool and
// layer when they are set), or a usage error when there is none.
func (a *app) findAllByKey(ctx context.Context, st ledger.Store, key, tool string, state ledger.State) ([]*ledger.Record, error) {
	if err := ledger.ValidateKey(key); err != nil {
		return nil, exitf(exitUsage, "%v; keys are printed by agentctl call and agentctl ledger list", err)
	}
	where := "tenant " + a.tenant
	if tool != "" {
		where = "tool " + tool + " in " + where
	}
	if a.layer != "" {
		where = "layer " + a.layer + " of " + where
	}
	if tool != "" && a.layer != "" {
		r, err := st.Get(ctx, ledger.ID{Tenant: a.tenant, Layer: a.layer, Tool: tool, Key: key})
		if errors.Is(err, ledger.ErrNotFound) || err == nil && state != "" && r.State != state {
			return nil, exitf(exitUsage, "no record with key %s in %s; list records with agentctl ledger list", key, where)
		}
		if err != nil {
			return nil, err
		}
		return []*ledger.Record{r}, nil
	}
	var found []*ledger.Record
	f := ledger.Filter{Tenant: a.tenant, Layer: a.layer, Tool: tool, Key: key, State: state, Limit: ledger.MaxPageSize}
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
	if len(found) == 0 {
		return nil, exitf(exitUsage, "no record with key %s in %s; list records with agentctl ledger list", key, where)
	}
	var tools []string
	for _, r := range found {
		if !slices.Contains(tools, r.Tool) {
			tools = append(tools, r.Tool)
		}
	}
	if len(tools) > 1 {
		slices.Sort(tools)
		return nil, exitf(exitUsage, "key %s names records of several tools (%s); pass --tool", key, strings.Join(tools, ", "))
	}
	// A list shows what it cannot decrypt as [encrypted]; one record is
	// read whole, so a missing or wrong ledger key is an error here.
	for i, r := range found {
		whole, err := st.Get(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		found[i] = whole
	}
	return found, nil
}

// layerText is a record's layer as the CLI shows it ("-" for a record of
// a ledger without layers).
func layerText(layer string) string { return orDash(layer) }

package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

// completeScan bounds what a completion reads: the tenant's newest records,
// one page of the store's List (an indexed, LIMITed query), however large
// the ledger; completeMax bounds what it offers.
const (
	completeScan = 1000
	completeMax  = 100
)

// addLedgerCompletion makes the shell complete keys, tools and sessions
// from the ledger: the KEY of the ledger commands, call's TOOL, and every
// --tool and --session flag that takes a value.
func (a *app) addLedgerCompletion(root *cobra.Command) {
	key := func(r *ledger.Record) string { return r.Key }
	tool := func(r *ledger.Record) string { return r.Tool }
	session := func(r *ledger.Record) string { return r.Session }
	walk(root, func(c *cobra.Command) {
		switch first := firstPositional(c.Use); {
		case first == "KEY" && c.ValidArgsFunction == nil:
			c.ValidArgsFunction = a.completeFirst(key)
		case first == "TOOL" && c.ValidArgsFunction == nil:
			c.ValidArgsFunction = a.completeFirst(tool)
		}
		for name, pick := range map[string]func(*ledger.Record) string{"tool": tool, "session": session} {
			f := c.LocalFlags().Lookup(name)
			if f == nil || f.Value.Type() != "string" {
				continue
			}
			if _, ok := c.GetFlagCompletionFunc(name); ok {
				continue
			}
			if err := c.RegisterFlagCompletionFunc(name, a.completeRecords(pick)); err != nil {
				panic(err) // a flag registered twice: a mistake in this file
			}
		}
	})
}

// firstPositional is the first argument a Use line names, also when it
// opens a group of alternatives ("reconcile (KEY --as ... | --auto ...)").
func firstPositional(use string) string {
	if f := strings.Fields(use); len(f) > 1 && strings.HasPrefix(f[1], "(") {
		return strings.TrimPrefix(f[1], "(")
	}
	if p := positionals(use); len(p) > 0 {
		return p[0]
	}
	return ""
}

// completeFirst completes the first positional argument only.
func (a *app) completeFirst(pick func(*ledger.Record) string) cobra.CompletionFunc {
	values := a.completeRecords(pick)
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return values(c, args, toComplete)
	}
}

// completeRecords offers the distinct values pick finds in the tenant's
// newest records that start with what was typed. A ledger that cannot be
// opened (none yet, a locked or unreachable one) offers nothing: a
// completion never prints an error or creates a ledger.
func (a *app) completeRecords(pick func(*ledger.Record) string) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ctx := c.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		none := cobra.ShellCompDirectiveNoFileComp
		st, err := a.ledger(ctx, readOnly)
		if err != nil {
			return nil, none
		}
		page, err := st.List(ctx, ledger.Filter{Tenant: a.tenant, Layer: a.layer, Limit: completeScan})
		if err != nil {
			return nil, none
		}
		var out []cobra.Completion
		for _, r := range page.Records {
			v := pick(r)
			if v == "" || !strings.HasPrefix(v, toComplete) || slices.Contains(out, v) {
				continue
			}
			if out = append(out, v); len(out) == completeMax {
				break
			}
		}
		slices.Sort(out)
		return out, none
	}
}

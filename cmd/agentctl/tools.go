package main

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
)

func init() { register(newToolsCmd) }

func newToolsCmd(a *app) *cobra.Command {
	var (
		up     upstream
		policy string
	)
	c := &cobra.Command{
		Use:   "tools [--server 'CMD ARGS' | --url URL]",
		Short: "List the tools of an MCP server, their annotations and what the policy says",
		Example: `  agentctl tools --server 'go run ./examples/payments'
  agentctl tools --url http://127.0.0.1:8080/mcp --json`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			if err := up.check(); err != nil {
				return err
			}
			pol, err := loadPolicy(policy)
			if err != nil {
				return err
			}
			cs, err := up.connect(c.Context(), nil)
			if err != nil {
				return err
			}
			defer a.closeOrWarn("the MCP session", cs.Close)
			tools, err := listTools(c.Context(), cs)
			if err != nil {
				return err
			}
			server := serverName(cs, &up)
			verdict := func(tool *mcp.Tool) confirm.Verdict {
				return pol.Decide(confirm.Tool{Name: tool.Name, Server: server, Hints: client.Hints(tool.Annotations)})
			}
			if a.json {
				for _, tool := range tools {
					if err := a.printJSON(toolJSON{Tool: tool, Policy: verdict(tool)}); err != nil {
						return err
					}
				}
				return nil
			}
			t := newTable(a.io.Out, a.colour(), "TOOL", "POLICY", "ANNOTATIONS", "DESCRIPTION").keep(1)
			for _, tool := range tools {
				v := verdict(tool)
				t.row(tool.Name, t.paint(verdictColour(v), string(v)), annotationText(tool.Annotations), clip(orDash(tool.Description), 60))
			}
			return a.flushTable(t)
		}),
	}
	up.flags(c)
	up.getenv = a.getenv
	a.policyFlag(c, &policy)
	return c
}

// toolJSON is a tool as the server listed it, plus what the confirmation
// policy says about calling it ("allow", "ask" or "deny").
type toolJSON struct {
	*mcp.Tool
	Policy confirm.Verdict `json:"policy"`
}

func verdictColour(v confirm.Verdict) string {
	switch v {
	case confirm.Allow:
		return green
	case confirm.Ask:
		return yellow
	case confirm.Deny:
		return red
	}
	return plain
}

// annotationText lists the hints a server declared, in words. Hints left
// unset are not shown: their defaults (destructive, open world) are what a
// client assumes anyway; a server that declared none shows "-".
func annotationText(an *mcp.ToolAnnotations) string {
	if an == nil {
		return "-"
	}
	var hints []string
	if an.ReadOnlyHint {
		hints = append(hints, "read-only")
	}
	if an.DestructiveHint != nil {
		if *an.DestructiveHint {
			hints = append(hints, "destructive")
		} else {
			hints = append(hints, "non-destructive")
		}
	}
	if an.IdempotentHint {
		hints = append(hints, "idempotent")
	}
	if an.OpenWorldHint != nil {
		if *an.OpenWorldHint {
			hints = append(hints, "open-world")
		} else {
			hints = append(hints, "closed-world")
		}
	}
	if len(hints) == 0 {
		// Declared, every hint at its default: say what --json says
		// (readOnlyHint and idempotentHint false), not "-" as if none.
		hints = append(hints, "not read-only", "not idempotent")
	}
	return strings.Join(hints, ",")
}

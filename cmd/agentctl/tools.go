package main

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func init() { register(newToolsCmd) }

func newToolsCmd(a *app) *cobra.Command {
	var up upstream
	c := &cobra.Command{
		Use:   "tools [--server 'CMD ARGS' | --url URL]",
		Short: "List the tools of an MCP server with their annotations",
		Args:  usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			if err := up.check(); err != nil {
				return err
			}
			cs, err := up.connect(c.Context(), nil)
			if err != nil {
				return err
			}
			defer cs.Close()
			tools, err := listTools(c.Context(), cs)
			if err != nil {
				return err
			}
			if a.json {
				for _, t := range tools {
					if err := a.printJSON(t); err != nil {
						return err
					}
				}
				return nil
			}
			t := newTable(a.io.Out, a.colour(), "TOOL", "ANNOTATIONS", "DESCRIPTION")
			for _, tool := range tools {
				t.row(tool.Name, annotationText(tool.Annotations), clip(orDash(tool.Description), 60))
			}
			return t.flush()
		}),
	}
	up.flags(c)
	return c
}

// annotationText lists the hints a server declared, in words. Hints left
// unset are not shown: their defaults (destructive, open world) are what a
// client assumes anyway, and a server that set nothing shows "-".
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
		return "-"
	}
	return strings.Join(hints, ",")
}

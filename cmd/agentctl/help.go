package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help and usage are cobra's, laid out the same way, but wrapped to the
// terminal's width (80 columns when stdout is no terminal): cobra's own
// templates print each flag's help on one line, which ran to 300 columns.

// setHelp makes every command's help and usage wrap to the output's width.
func (a *app) setHelp(root *cobra.Command) {
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		w := c.OutOrStdout()
		width := a.proseWidth(w)
		if text := strings.TrimRight(cmp.Or(c.Long, c.Short), " \n"); text != "" {
			a.fprintf(w, "%s\n\n", wrapIndent(text, width, "", ""))
		}
		if c.Runnable() || c.HasSubCommands() {
			a.keepOutErr(writeUsage(w, c, width))
		}
	})
	root.SetUsageFunc(func(c *cobra.Command) error {
		w := c.OutOrStderr()
		return writeUsage(w, c, a.proseWidth(w))
	})
}

// writeUsage is cobra's usage text, wrapped to width.
func writeUsage(w io.Writer, c *cobra.Command, width int) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	if c.Runnable() {
		b.WriteString(wrapIndent(c.UseLine(), width, "  ", "      ") + "\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("  " + c.CommandPath() + " [command]\n")
	}
	if c.HasExample() {
		b.WriteString("\nExamples:\n" + wrapIndent(strings.TrimRight(c.Example, "\n"), width, "", "      ") + "\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nAvailable Commands:\n")
		pad := c.NamePadding()
		hang := strings.Repeat(" ", 2+pad+1)
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() && sub.Name() != "help" {
				continue
			}
			name := fmt.Sprintf("  %-*s ", pad, sub.Name())
			b.WriteString(wrapIndent(sub.Short, width, name, hang) + "\n")
		}
	}
	flags := func(title string, fs *pflag.FlagSet) {
		b.WriteString("\n" + title + ":\n")
		b.WriteString(strings.TrimRight(fs.FlagUsagesWrapped(width), " \n") + "\n")
	}
	if c.HasAvailableLocalFlags() {
		flags("Flags", c.LocalFlags())
	}
	if c.HasAvailableInheritedFlags() {
		flags("Global Flags", c.InheritedFlags())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString(wrapIndent(fmt.Sprintf("\nUse %q for more information about a command.", c.CommandPath()+" [command] --help"), width, "", "") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

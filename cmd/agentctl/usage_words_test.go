package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/redact"
	"github.com/spf13/cobra"
)

// A mistyped command is one line that names the nearest command, not
// cobra's four lines folded into "; ; Did you mean this?; call".
func TestUnknownCommandIsOneCleanLine(t *testing.T) {
	for _, args := range [][]string{{"cal"}, {"ledger", "lst"}} {
		o := inProcess(t, nil, nil, args...)
		o.wantExit(t, exitUsage, `unknown command "`+args[len(args)-1]+`"`, "did you mean", "--help")
		if strings.Contains(o.stderr, "; ;") || strings.Contains(o.stderr, "Did you mean this?") || strings.Count(o.stderr, "\n") != 1 {
			t.Errorf("agentctl %v printed %q; want one clean line with the suggestion", args, o.stderr)
		}
	}
	o := inProcess(t, nil, nil, "cal")
	if !strings.Contains(o.stderr, "did you mean call?") {
		t.Errorf("agentctl cal printed %q; want it to suggest call", o.stderr)
	}
	if o := inProcess(t, nil, nil); o.code != exitOK || !strings.Contains(o.stdout, "Usage:") {
		t.Errorf("a bare agentctl: exit %d, stdout %q; want the help", o.code, o.stdout)
	}
}

// A command run without its required argument says which one is missing
// and shows the usage, instead of "takes at least 1 arguments".
func TestMissingArgumentIsNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"call"}, "agentctl call needs TOOL; usage: agentctl call"},
		{[]string{"ledger", "show"}, "agentctl ledger show needs KEY; usage: agentctl ledger show KEY"},
		{[]string{"ledger", "approve"}, "agentctl ledger approve needs KEY; usage:"},
	} {
		o := inProcess(t, nil, nil, tc.args...)
		o.wantExit(t, exitUsage, tc.want)
		if strings.Contains(o.stderr, "arguments") {
			t.Errorf("agentctl %v printed %q; want the missing argument named", tc.args, o.stderr)
		}
	}
}

// The redactor leaves the CLI's own error text alone: a ledger file named
// like a secret field ("passwd") is named whole, with the driver's words.
func TestLedgerErrorNotRedacted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(path, []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := inProcess(t, map[string]string{"HOME": t.TempDir()}, nil, "--ledger", path, "ledger", "list")
	o.wantExit(t, exitUsage, path+": sqlite: ", "is not a SQLite database")
	if strings.Contains(o.stderr, redact.Placeholder) {
		t.Errorf("stderr %q redacts the CLI's own text", o.stderr)
	}
}

// Every runnable command's help has an Examples: section.
func TestEveryCommandHasExamples(t *testing.T) {
	a := &app{getenv: func(string) string { return "" }, envDefaults: map[string]string{}}
	root := a.rootCommand()
	strictCompletion(root)
	n := 0
	walk(root, func(c *cobra.Command) {
		if c.Hidden || !c.Runnable() || strings.HasPrefix(c.Name(), "__") {
			return
		}
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", c.CommandPath())
			return
		}
		o := inProcess(t, nil, nil, append(strings.Fields(c.CommandPath())[1:], "--help")...)
		if o.code != exitOK || !strings.Contains(o.stdout, "Examples:\n") {
			t.Errorf("%s --help: exit %d; want an Examples: section:\n%s", c.CommandPath(), o.code, o.stdout)
		}
	})
	if n < 20 {
		t.Errorf("walked %d runnable commands; want every command of agentctl", n)
	}
}

//go:build unix

package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
)

// Output and help fit a terminal of 80 columns: run on a pseudo-terminal
// that wide, no line the binary prints is wider.

// commandPaths lists every command of agentctl that help can be asked of.
func commandPaths() [][]string {
	a := &app{getenv: func(string) string { return "" }, envDefaults: map[string]string{}}
	root := a.rootCommand()
	root.InitDefaultCompletionCmd()
	var paths [][]string
	var visit func(c *cobra.Command, path []string)
	visit = func(c *cobra.Command, path []string) {
		if c.Hidden {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			visit(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	visit(root, nil)
	return paths
}

func TestHelpFits80Columns(t *testing.T) {
	agentctl, _ := binaries(t)
	paths := commandPaths()
	if len(paths) < 20 {
		t.Fatalf("found %d commands; want every command of agentctl", len(paths))
	}
	for _, path := range paths {
		name := strings.Join(append([]string{"agentctl"}, path...), " ")
		t.Run(name, func(t *testing.T) {
			r := startPTYOutput(t, agentctl, []string{"HOME=" + t.TempDir()}, 80, append(path, "--help")...)
			code, screen := r.exit()
			if code != exitOK || !strings.Contains(screen, "Usage:") && !strings.Contains(screen, "Flags:") {
				t.Fatalf("%s --help: exit %d, screen %q; want the help", name, code, screen)
			}
			if wide := wideLines(screen, 80); len(wide) > 0 {
				t.Errorf("%s --help has %d lines wider than 80 columns, the first: %q", name, len(wide), wide[0])
			}
		})
	}
	// Without a terminal the same help wraps at 80 too.
	cmd := exec.Command(agentctl, "call", "--help")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	o := runOutcome(t, cmd)
	if wide := wideLines(o.stdout, 80); o.code != exitOK || len(wide) > 0 {
		t.Errorf("call --help in a pipe: exit %d, wide lines %q", o.code, wide)
	}
}

// The demo's story wraps at spaces only, so a key is never split, and its
// summary table fits.
func TestDemoFits80Columns(t *testing.T) {
	agentctl, _ := binaries(t)
	r := startPTYOutput(t, agentctl, []string{"HOME=" + t.TempDir()}, 80, "demo")
	code, screen := r.exit()
	if code != exitOK {
		t.Fatalf("demo exited %d; screen %q", code, screen)
	}
	if wide := wideLines(screen, 80); len(wide) > 0 {
		t.Errorf("demo printed %d lines wider than 80 columns, the first: %q", len(wide), wide[0])
	}
	plain := stripANSI(screen)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`demo-[0-9a-f]{8}-lost`), regexp.MustCompile(`demo-[0-9a-f]{8}-stall`), regexp.MustCompile(`pay_[0-9a-f]{16}`),
		regexp.MustCompile(`(?m)^OPERATION +KEY +ATTEMPTS +EXECUTIONS +REPLAYS +STATE$`),
		regexp.MustCompile(`(?m)^crash, restart +demo-[0-9a-f]{8}-crash +2 +1 +1 +SUCCEEDED\*$`),
	} {
		if !want.MatchString(plain) {
			t.Errorf("the demo's screen has no whole %s:\n%s", want, plain)
		}
	}
	// Every line that wraps ends at a word: the line after it continues
	// the sentence, indented, never a broken word.
	for _, line := range strings.Split(plain, "\n") {
		if strings.HasSuffix(line, "-") {
			t.Errorf("a line ends on a hyphen, a word split: %q", line)
		}
	}
}

// ledger list on 80 columns keeps keys and tool names whole: the session
// column, then the layer, give way first, and a note says so.
func TestLedgerListFits80Columns(t *testing.T) {
	agentctl, _ := binaries(t)
	path, env := ledgerEnv(t)
	seedLedger(t, path, time.Now(),
		seedRecord{tool: "create_payment", key: "order-2026-000123", session: "conversation-7f3a9c2e-with-a-long-name", state: ledger.StateSucceeded, result: okResult},
		seedRecord{tool: "create_payment", key: "order-2026-000124", session: "conversation-7f3a9c2e-with-a-long-name", state: ledger.StateUnknown},
	)
	r := startPTYOutput(t, agentctl, []string{"MCPLEDGER_LEDGER=" + path, "HOME=" + env["HOME"]}, 80, "ledger", "list")
	code, screen := r.exit()
	if code != exitOK {
		t.Fatalf("ledger list exited %d; screen %q", code, screen)
	}
	if wide := wideLines(screen, 80); len(wide) > 0 {
		t.Errorf("ledger list printed lines wider than 80 columns: %q", wide)
	}
	plain := stripANSI(screen)
	for _, want := range []string{"create_payment", "order-2026-000123", "order-2026-000124", "SESSION and LAYER left out", "--wide"} {
		if !strings.Contains(plain, want) {
			t.Errorf("ledger list on 80 columns does not show %q whole:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "conversation-7f3a9c2e-with-a-long-name") || strings.Contains(plain, "…") {
		t.Errorf("ledger list cut a cell instead of leaving the session out:\n%s", plain)
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The README's shell examples cannot drift from the CLI: every agentctl
// command line in a sh block (and every "$ agentctl" line of an output
// block) names commands and flags agentctl has, every ./path a go command
// or a --server names exists in the repository, and a ./binary it runs is
// built by a step before it. It checks; it does not run the commands
// (they pay, start servers and need PostgreSQL).
func TestReadmeExamplesNameRealThings(t *testing.T) {
	const root = "../.."
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	a := &app{getenv: func(string) string { return "" }, envDefaults: map[string]string{}}
	cli := a.rootCommand()
	strictCompletion(cli)
	built := map[string]bool{}
	checked := 0
	for _, block := range readmeBlocks(string(b)) {
		dir := root
		for _, line := range block {
			words := shellWords(line)
			for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
				words = words[1:] // an environment assignment
			}
			if len(words) == 0 {
				continue
			}
			switch {
			case words[0] == "cd" && len(words) > 1:
				dir = filepath.Join(dir, words[1])
			case words[0] == "go" && len(words) > 1:
				for i, w := range words {
					if w == "-o" && i+1 < len(words) {
						built[filepath.Clean(words[i+1])] = true
					}
					if strings.HasPrefix(w, "./") && !strings.HasSuffix(w, "/...") {
						if _, err := os.Stat(filepath.Join(dir, w)); err != nil {
							t.Errorf("README: %q names %s, which is not in the repository", line, w)
						}
					}
				}
			case words[0] == "agentctl":
				checked++
				checkAgentctlLine(t, cli, line, words[1:], built)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d agentctl lines of the README; want all of them", checked)
	}
}

// checkAgentctlLine finds the command words name and checks its flags,
// and the binaries a --server or --count-cmd runs.
func checkAgentctlLine(t *testing.T, cli *cobra.Command, line string, words []string, built map[string]bool) {
	t.Helper()
	c := cli
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			return // the rest is the upstream's command line
		}
		if strings.HasPrefix(w, "-") {
			name := strings.TrimLeft(strings.SplitN(w, "=", 2)[0], "-")
			f := c.Flags().Lookup(name)
			if f == nil {
				f = c.InheritedFlags().Lookup(name)
			}
			if f == nil && name != "help" && name != "version" {
				t.Errorf("README: %q: %s has no flag --%s", line, c.CommandPath(), name)
				continue
			}
			if (name == "server" || name == "count-cmd") && i+1 < len(words) {
				if exe := shellWords(words[i+1]); len(exe) > 0 && strings.HasPrefix(exe[0], "./") && !built[filepath.Clean(exe[0])] {
					t.Errorf("README: %q runs %s, which no step before it builds", line, exe[0])
				}
			}
			if f != nil && f.Value.Type() != "bool" && !strings.Contains(w, "=") {
				i++ // the flag's value
			}
			continue
		}
		if sub, _, err := c.Find([]string{w}); err == nil && sub != c {
			c = sub
			continue
		}
		if c.HasAvailableSubCommands() {
			t.Errorf("README: %q: %s has no command %q", line, c.CommandPath(), w)
			return
		}
	}
}

// readmeBlocks returns the lines of each sh block, continuations joined
// and comments dropped, and of each other block the "$ agentctl" lines.
func readmeBlocks(md string) [][]string {
	var blocks [][]string
	var cur []string
	in, sh := false, false
	pending := ""
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			if in {
				blocks = append(blocks, cur)
				cur, in = nil, false
				continue
			}
			in, sh = true, strings.TrimPrefix(line, "```") == "sh"
			continue
		}
		if !in {
			continue
		}
		if !sh {
			if !strings.HasPrefix(line, "$ agentctl") && pending == "" {
				continue
			}
			line = strings.TrimPrefix(line, "$ ")
		}
		line = pending + line
		if strings.HasSuffix(line, "\\") {
			pending = strings.TrimSuffix(line, "\\") + " "
			continue
		}
		pending = ""
		cur = append(cur, line)
	}
	return blocks
}

// shellWords splits a line the way sh does for these examples: quotes
// group, an unquoted # starts a comment, and a shell operator ends the
// command.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		case (r == '>' || r == '|' || r == '&' || r == ';') && !inWord:
			return words
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

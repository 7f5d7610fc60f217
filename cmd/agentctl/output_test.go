package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Colour codes must not break the alignment of the columns after them.
func TestTableColourAlignment(t *testing.T) {
	for _, colour := range []bool{false, true} {
		var b bytes.Buffer
		tb := newTable(&b, colour, "KEY", "STATE", "ATTEMPTS")
		for _, s := range []ledger.State{ledger.StateSucceeded, ledger.StateUnknown, ledger.StateDenied, "X"} {
			tb.row("k-"+string(s), tb.paint(stateColour(s), string(s)), "1")
		}
		if err := tb.flush(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "\x1b["); got != colour {
			t.Errorf("colour %v: output has colour codes: %v", colour, got)
		}
		lines := strings.Split(strings.TrimRight(ansi.ReplaceAllString(b.String(), ""), "\n"), "\n")
		col := strings.Index(lines[0], "ATTEMPTS")
		for _, l := range lines[1:] {
			if len(l) <= col || l[col] != '1' {
				t.Errorf("colour %v: row %q has no value under ATTEMPTS (column %d)", colour, l, col)
			}
		}
	}
}

func TestColourOnlyOnATerminal(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"buffer", nil},
		{"NO_COLOR", map[string]string{"NO_COLOR": "1"}},
		{"dumb terminal", map[string]string{"TERM": "dumb"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &app{io: stdio{Out: &bytes.Buffer{}}, getenv: func(k string) string { return tc.env[k] }}
			if a.colour() {
				t.Errorf("colour() = true for %s; want false", tc.name)
			}
		})
	}
}

// Shell completion offers the fixed values of --state and --as.
func TestCompletion(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "ledger", "list", "--state", ""}, []string{"unknown", "succeeded", "pending_approval"}},
		{[]string{"__complete", "ledger", "reconcile", "k", "--as", ""}, []string{"succeeded", "failed"}},
		{[]string{"__complete", "ledger", ""}, []string{"list", "show", "reconcile", "purge"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			o := inProcess(t, nil, nil, tc.args...)
			o.wantExit(t, exitOK)
			for _, w := range tc.want {
				if !regexp.MustCompile(`(?m)^` + w + `\b`).MatchString(o.stdout) {
					t.Errorf("agentctl %q offers %q; want %q among them", tc.args, o.stdout, w)
				}
			}
		})
	}
}

// A shell agentctl has no completion for is a usage error; the known ones
// print their script.
func TestCompletionShells(t *testing.T) {
	inProcess(t, nil, nil, "completion", "tcsh").wantExit(t, exitUsage, "tcsh")
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		o := inProcess(t, nil, nil, "completion", sh)
		o.wantExit(t, exitOK)
		if !strings.Contains(o.stdout, "agentctl") {
			t.Errorf("agentctl completion %s printed no script: %.80q", sh, o.stdout)
		}
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct {
		in        string
		keepLines bool
		want      string
	}{
		{"plain text €", false, "plain text €"},
		{"a\tb\nc", false, `a\tb\nc`},
		{"a\tb\nc", true, "a\tb\nc"},
		{"\x1b[2Jgone", true, `\x1b[2Jgone`},
		{"bell\a\u009b", false, `bell\x07\x9b`},
	}
	for _, tc := range tests {
		if got := printable(tc.in, tc.keepLines); got != tc.want {
			t.Errorf("printable(%q, %v) = %q; want %q", tc.in, tc.keepLines, got, tc.want)
		}
	}
}

// TestLostOutput: a command whose output cannot be written (stdout closed,
// or a full disk behind it) ends with exit 1 and says so, while a failed
// write to stderr leaves the result's exit code alone.
func TestLostOutput(t *testing.T) {
	closed, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Logf("no /dev/full here (%v): only the closed file is tried", err)
		full = nil
	} else {
		t.Cleanup(func() { _ = full.Close() })
	}
	for _, tc := range []struct {
		name string
		out  *os.File
		args []string
	}{
		{"version to a closed file", closed, []string{"version"}},
		{"help to a closed file", closed, []string{"ledger", "--help"}},
		{"version to a full disk", full, []string{"version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.out == nil {
				t.Skip("no /dev/full")
			}
			var errb bytes.Buffer
			code := run(context.Background(), tc.args, stdio{In: strings.NewReader(""), Out: tc.out, Err: &errb}, func(string) string { return "" })
			o := outcome{code: code, stderr: errb.String()}
			o.wantExit(t, exitFailed, "writing the output failed", "check where stdout goes")
		})
	}
	t.Run("stderr closed", func(t *testing.T) {
		var out bytes.Buffer
		code := run(context.Background(), []string{"version"}, stdio{In: strings.NewReader(""), Out: &out, Err: closed}, func(string) string { return "" })
		if code != exitOK || !strings.HasPrefix(out.String(), "agentctl ") {
			t.Errorf("run(version) with stderr closed = %d, stdout %q; want %d and the version", code, out.String(), exitOK)
		}
	})
}

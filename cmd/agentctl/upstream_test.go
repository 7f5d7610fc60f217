package main

import (
	"net"
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"go run ./examples/payments", []string{"go", "run", "./examples/payments"}, false},
		{"  spaced\t out  ", []string{"spaced", "out"}, false},
		{`srv --name 'two words' --x "a \"q\" b"`, []string{"srv", "--name", "two words", "--x", `a "q" b`}, false},
		{`a\ b c`, []string{"a b", "c"}, false},
		{`'' x`, []string{"", "x"}, false},
		{"", nil, false},
		{`it's`, nil, true},
		{`trailing\`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := splitCommand(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Errorf("splitCommand(%q) = %q, nil; want an error", tc.in, got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("splitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzSplitCommand: splitting never panics, and words quoted back the way
// a shell would quote them split into the same words.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"go run ./x", `a 'b c' "d\"e"`, `\`, `'`, "a\tb\nc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitCommand(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := splitCommand(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("splitCommand(quote(%q)) = %q, %v; want the same words", words, again, err)
		}
	})
}

func TestUpstreamErrors(t *testing.T) {
	// A port nothing listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()

	tests := []struct {
		name  string
		args  []string
		code  int
		hints []string
	}{
		{"no server", nil, exitUsage, []string{"--server", "--url"}},
		{"both", []string{"--server", "x", "--url", "http://127.0.0.1:1/"}, exitUsage, []string{"one of them"}},
		{"bad url", []string{"--url", "ftp://example/x"}, exitUsage, []string{"http://"}},
		{"bad quoting", []string{"--server", "srv 'oops"}, exitUsage, []string{"unterminated"}},
		{"empty server", []string{"--server", "  "}, exitUsage, []string{"--server"}},
		{"command not found", []string{"--server", "no-such-mcp-server-here --flag"}, exitUnreachable, []string{"no-such-mcp-server-here", "--server"}},
		{"server exits at once", []string{"--server", `sh -c 'echo database is locked >&2; exit 3'`}, exitUnreachable, []string{"database is locked", "--server"}},
		{"connection refused", []string{"--url", closed}, exitUnreachable, []string{closed, "--url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inProcess(t, nil, nil, append([]string{"tools"}, tc.args...)...).wantExit(t, tc.code, tc.hints...)
		})
	}
}

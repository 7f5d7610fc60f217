package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestRunRefusesBadUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
		args []string
		want string
	}{
		{"no API key", "", []string{"-server", "payments"}, "ANTHROPIC_API_KEY is not set"},
		{"two servers", "k", []string{"-server", "payments", "-url", "http://127.0.0.1:1/mcp"}, "not both"},
		{"chain and key", "k", []string{"-server", "payments", "-chain", "c", "-key", "k"}, "-chain or -key"},
		{"stray argument", "k", []string{"pay me"}, "-prompt"},
		{"no server", "k", []string{"-ledger", "LEDGER"}, "-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ANTHROPIC_API_KEY", tc.key)
			args := tc.args
			ledger := t.TempDir() + "/agent.db"
			for i, a := range args {
				if a == "LEDGER" {
					args[i] = ledger
				}
			}
			var out, errOut bytes.Buffer
			err := run(args, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q) = %v; want an error saying %q", args, err, tc.want)
			}
			if _, err := os.Stat(ledger); !os.IsNotExist(err) {
				t.Fatalf("a refused run left a ledger behind (%v)", err)
			}
		})
	}
}

func TestRunHelpExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-h"}, &out, &errOut); err != nil || !strings.Contains(errOut.String(), "-chain") {
		t.Fatalf("run(-h) = %v, usage %q; want nil and the flags", err, errOut.String())
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"
)

// A server that exits with a failure status once its stdin ends: the
// command's result stands (the tool list, exit 0), and the failed close of
// its session is one warning on stderr.
func TestSessionCloseFailureWarns(t *testing.T) {
	e := newE2E(t)
	server := fmt.Sprintf(`sh -c "'%s' -db '%s'; exit 3"`, e.payments, e.payDB)
	o := e.run(nil, "tools", "--server", server)
	if o.code != exitOK || !strings.Contains(o.stdout, "create_payment") {
		t.Fatalf("agentctl tools = %d, stdout %q, stderr %q; want 0 and the tool list", o.code, o.stdout, o.stderr)
	}
	const want = "agentctl: warning: closing the MCP session failed: exit status 3; the command's result stands"
	if !strings.Contains(o.stderr, want) {
		t.Errorf("stderr = %q; want %q", o.stderr, want)
	}
	// The same server exiting cleanly: no warning.
	if o := e.run(nil, "tools", "--server", e.server); o.code != exitOK || strings.Contains(o.stderr, "warning") {
		t.Errorf("agentctl tools (clean exit) = %d, stderr %q; want 0 and no warning", o.code, o.stderr)
	}
}

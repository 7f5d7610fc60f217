package server_test

import (
	"os/exec"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

// deadOwner is the owner string of a real process that was SIGKILLed and
// reaped.
func deadOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a child: %v", err)
	}
	o, err := ledger.OwnerOf(cmd.Process.Pid, "payments")
	if err != nil {
		t.Fatalf("OwnerOf(child) = %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill the child: %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the killed child exited cleanly")
	}
	return o.String()
}

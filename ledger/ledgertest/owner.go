package ledgertest

import (
	"os/exec"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/process"
)

// DeadOwner is the owner string of a real process of this host that was
// SIGKILLed and reaped, labelled label: process.Gone reports it gone,
// so a record it holds stands for one whose owner crashed. It needs a
// sleep(1) on PATH.
func DeadOwner(t testing.TB, label string) string {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a child: %v", err)
	}
	o, err := process.Of(cmd.Process.Pid, label)
	if err != nil {
		t.Fatalf("OwnerOf(child) = %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill the child: %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the killed child exited cleanly")
	}
	if !process.Gone(o.String()) {
		t.Fatalf("OwnerGone(%s) = false for a killed, reaped child", o)
	}
	return o.String()
}

package process_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpledger/mcpledger/ledger/process"
)

// A killed child that is not reaped yet (a zombie) is gone already: it
// runs nothing, though its pid still has a /proc entry.
func TestOwnerGoneZombie(t *testing.T) {
	me := process.Self("test")
	if me.Boot == "" {
		t.Skip("no /proc: process liveness cannot be known here")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program to run as a child")
	}
	cmd := exec.Command(sleep, "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := process.ProcessStart(pid)
	if err != nil {
		t.Fatalf("ProcessStart(child %d) = %v", pid, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// WNOWAIT waits for the exit and leaves the child unreaped.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid(%d) = %v", pid, err)
	}
	defer cmd.Wait() //nolint:errcheck // reaps the zombie; the kill is the expected error
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		t.Fatalf("the zombie's /proc entry = %v; want it still there", err)
	}
	if _, err := process.ProcessStart(pid); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ProcessStart(zombie) = %v; want os.ErrNotExist", err)
	}
	child := process.Owner{Label: "child", Host: me.Host, Boot: me.Boot, PID: pid, Start: start}.String()
	if !process.Gone(child) {
		t.Errorf("OwnerGone(zombie child %q) = false; want true", child)
	}
}

package process_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/process"
)

func TestOwnerRoundTrip(t *testing.T) {
	for _, o := range []process.Owner{
		{Label: "agentctl", Host: "host-1", Boot: "0123456789ab", PID: 4242, Start: 987654},
		{Label: "me@work#2", Host: "build.example", Boot: "ffffffffffff", PID: 1, Start: 1},
		{Label: "no-proc", Host: "mac", PID: 77}, // no boot id, no start time
		{Label: "", Host: "h", Boot: "b", PID: 3, Start: 4},
	} {
		s := o.String()
		got, ok := process.Parse(s)
		if !ok || got != o {
			t.Errorf("ParseOwner(%q) = %+v, %v; want %+v back", s, got, ok, o)
		}
	}
	for _, s := range []string{"", "worker-1", "w@h", "w@h#x.1.b", "w@h#0.1.b", "w@h#-3.1.b", "w@h#1.2", "w@h#1.x.b", "w#1.2.3@h"} {
		if got, ok := process.Parse(s); ok {
			t.Errorf("ParseOwner(%q) = %+v, true; want false", s, got)
		}
	}
	me := process.NewOwner("agentctl")
	o, ok := process.Parse(me)
	if !ok || o.Label != "agentctl" || o.PID != os.Getpid() {
		t.Errorf("ParseOwner(NewOwner(%q)) = %+v, %v; want this process (pid %d) labelled agentctl", "agentctl", o, ok, os.Getpid())
	}
	if o, _ := process.Parse(process.NewOwner("")); o.Label == "" {
		t.Errorf("NewOwner(\"\") has no label; want a default one")
	}
	host, err := os.Hostname()
	if err == nil && o.Host != host {
		t.Errorf("NewOwner host = %q; want %q", o.Host, host)
	}
}

func TestOwnerGoneNotKnown(t *testing.T) {
	me := process.Self("test")
	cases := []struct {
		name  string
		owner string
	}{
		{"this process", process.NewOwner("test")},
		{"an owner string that does not parse", "worker-1"},
		{"another host", process.Owner{Label: "x", Host: me.Host + ".elsewhere", Boot: me.Boot, PID: me.PID, Start: me.Start + 1}.String()},
		{"another boot", process.Owner{Label: "x", Host: me.Host, Boot: "000000000000", PID: me.PID, Start: me.Start + 1}.String()},
		{"no start time", process.Owner{Label: "x", Host: me.Host, Boot: me.Boot, PID: me.PID}.String()},
	}
	for _, tc := range cases {
		if process.Gone(tc.owner) {
			t.Errorf("OwnerGone(%s: %q) = true; want false: it cannot be known dead", tc.name, tc.owner)
		}
	}
}

// A real child process: alive, its owner is not gone; killed and reaped,
// it is, at once.
func TestOwnerGoneAfterKill(t *testing.T) {
	me := process.Self("test")
	if me.Boot == "" {
		t.Skip("no /proc: process liveness cannot be known here")
	}
	// The pid of this process with another start time is another process.
	reused := me
	reused.Start++
	if !process.Gone(reused.String()) {
		t.Errorf("OwnerGone(this pid, another start time) = false; want true: the pid was reused")
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
	child := process.Owner{Label: "child", Host: me.Host, Boot: me.Boot, PID: pid, Start: start}.String()
	if process.Gone(child) {
		t.Errorf("OwnerGone(running child %q) = true; want false", child)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child Wait = %v; want it killed", err)
	}
	if _, err := process.ProcessStart(pid); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ProcessStart(reaped child) = %v; want os.ErrNotExist", err)
	}
	if !process.Gone(child) {
		t.Errorf("OwnerGone(killed child %q) = false; want true", child)
	}
}

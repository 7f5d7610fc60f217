//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C while the server runs the payment leaves the operation UNKNOWN
// (exit 4), never a silent retry later; a person then settles it.
func TestCallInterrupted(t *testing.T) {
	e := newE2E(t)
	// The server's stderr goes to a FIFO the test reads, so the test knows
	// the handler is running before it interrupts agentctl.
	fifo := filepath.Join(e.dir, "server.stderr")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf(`sh -c "exec '%s' -db '%s' 2>'%s'"`, e.payments, e.payDB, fifo)
	cmd := exec.Command(e.agentctl, append([]string{"call", "--server", server, "--yes", "--key", "int-1"}, pay...)...)
	cmd.Env = append(append([]string{}, e.env...), "PAYMENTS_FAULT=handler=hang")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	go func() {
		f, err := os.Open(fifo) // blocks until the server opens it
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "fault handler reached") {
				close(reached)
				signalled = true
			}
		}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the payment handler was not reached; agentctl said %q", stderr.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok || ee.ExitCode() != exitUnknown {
		t.Fatalf("interrupted call: %v; want exit %d\nstderr: %s", err, exitUnknown, stderr.String())
	}
	outcome{code: exitUnknown, stderr: stderr.String()}.wantExit(t, exitUnknown, "int-1", "ledger reconcile")

	show := e.run(nil, "--json", "ledger", "show", "int-1")
	if recs := jsonLines[map[string]any](t, show.stdout); len(recs) != 1 || recs[0]["state"] != "UNKNOWN" {
		t.Fatalf("ledger show int-1 = %s; want UNKNOWN", show.stdout)
	}
	if n := e.paymentsFor("int-1"); n != 0 {
		t.Errorf("payments for int-1 = %d; want 0 (the handler never committed)", n)
	}
	e.run(nil, "ledger", "reconcile", "int-1", "--as", "failed", "--note", "no payment row").wantExit(t, exitOK)
	again := e.call(nil, append([]string{"--yes", "--key", "int-1"}, pay...)...)
	again.wantExit(t, exitFailed)
	if !strings.Contains(again.stdout, "no payment row") {
		t.Errorf("after reconcile --as failed, call int-1 printed %q; want the reconciled failure", again.stdout)
	}
}

package main

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// startPaymentsHTTP runs the payments example on streamable HTTP and
// returns its URL; it stops when the test ends.
func (e *e2e) startPaymentsHTTP(extra ...string) string {
	e.t.Helper()
	url, _ := e.servePaymentsHTTP(extra...)
	return url
}

// servePaymentsHTTP is startPaymentsHTTP, with the server's process.
func (e *e2e) servePaymentsHTTP(extra ...string) (string, *exec.Cmd) {
	e.t.Helper()
	cmd := exec.Command(e.payments, append([]string{"-db", e.payDB, "-http", "127.0.0.1:0"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The server prints its address once it listens.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
			go func() {
				for sc.Scan() { // keep draining so the server never blocks on stderr
				}
			}()
			return strings.TrimSpace(url), cmd
		}
	}
	e.t.Fatalf("payments -http exited before listening: %v", sc.Err())
	return "", nil
}

func TestCallOverHTTP(t *testing.T) {
	e := newE2E(t)
	url := e.startPaymentsHTTP()

	tools := e.run(nil, "tools", "--url", url)
	tools.wantExit(t, exitOK)
	if !strings.Contains(tools.stdout, "create_payment") {
		t.Errorf("tools --url printed %q; want create_payment", tools.stdout)
	}
	args := append([]string{"call", "--url", url, "--yes", "--key", "h-1"}, pay...)
	first := e.run(nil, args...)
	first.wantExit(t, exitOK)
	second := e.run(nil, args...)
	second.wantExit(t, exitOK)
	if first.stdout != second.stdout || !strings.Contains(second.stderr, "replayed from ") {
		t.Errorf("over HTTP the calls printed %q then %q (%q); want one payment, replayed", first.stdout, second.stdout, second.stderr)
	}
	if n := e.paymentsFor("h-1"); n != 1 {
		t.Errorf("payments for h-1 over HTTP = %d; want 1", n)
	}
}

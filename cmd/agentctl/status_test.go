//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// On a terminal, call says on stderr what it is doing; these tests give
// the real binary a pseudo-terminal for stderr and read what it draws.

// ptyScreen is the screen of one agentctl run whose stderr is a pty.
type ptyScreen struct {
	cmd  *exec.Cmd
	mu   sync.Mutex // guards text
	text bytes.Buffer
	more chan struct{}
	done chan struct{}
	out  bytes.Buffer
}

func (e *e2e) onTerminal(env []string, args ...string) *ptyScreen {
	e.t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		e.t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		e.t.Fatal(err)
	}
	term := &ptyScreen{more: make(chan struct{}, 1), done: make(chan struct{})}
	cmd := exec.Command(e.agentctl, args...)
	cmd.Env = append(append(append([]string{}, e.env...), "TERM=xterm"), env...)
	cmd.Stderr = tty
	cmd.Stdout = &term.out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	tty.Close() // the child holds its own copy
	term.cmd = cmd
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.text.Write(buf[:n])
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	e.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		ptmx.Close()
	})
	return term
}

// waitFor returns once the screen shows want.
func (term *ptyScreen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		if strings.Contains(term.screen(), want) {
			return
		}
		select {
		case <-term.more:
		case <-deadline:
			t.Fatalf("the terminal never showed %q; it showed %q", want, term.screen())
		}
	}
}

func (term *ptyScreen) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.text.String()
}

// exit waits for the run to end and returns its exit code and the whole
// screen.
func (term *ptyScreen) exit(t *testing.T) (int, string) {
	t.Helper()
	err := term.cmd.Wait()
	<-term.done
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, term.screen()
}

func TestStatusShowsProgress(t *testing.T) {
	e := newE2E(t)
	// The notes server (this test binary) reports progress 1 of 2.
	term := e.onTerminal([]string{envTestUpstream + "=notes"}, "call", "--server", "'"+os.Args[0]+"'", "--key", "n-1", "chatty")
	code, screen := term.exit(t)
	if code != exitOK {
		t.Fatalf("call chatty exited %d; screen: %q", code, screen)
	}
	for _, want := range []string{"connecting to ", "chatty [##########          ]  50%", "key n-1: SUCCEEDED"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal never showed %q; it showed %q", want, screen)
		}
	}
	// The status line is erased before the result's notes.
	if i, j := strings.LastIndex(screen, "50%"), strings.Index(screen, "key n-1: SUCCEEDED"); i < 0 || i > j || !strings.Contains(screen[i:j], "\r\x1b[K") {
		t.Errorf("the status line was not cleared before the result: %q", screen)
	}
	if term.out.String() != "done\n" {
		t.Errorf("stdout = %q; want the result alone", term.out.String())
	}
	// Without a terminal, and under --json on one, nothing of it is drawn.
	plain := e.runEnv(nil, []string{envTestUpstream + "=notes"}, "call", "--server", "'"+os.Args[0]+"'", "--key", "n-2", "chatty")
	plain.wantExit(t, exitOK)
	if strings.Contains(plain.stderr, "\r") || strings.Contains(plain.stderr, "connecting") {
		t.Errorf("without a terminal, stderr = %q; want no status line", plain.stderr)
	}
	quiet := e.onTerminal([]string{envTestUpstream + "=notes"}, "--json", "call", "--server", "'"+os.Args[0]+"'", "--key", "n-3", "chatty")
	if code, screen := quiet.exit(t); code != exitOK || strings.Contains(screen, "connecting") || strings.Contains(screen, "%") {
		t.Errorf("--json on a terminal: exit %d, screen %q; want no status line", code, screen)
	}
}

func TestStatusShowsWaitsAndRetries(t *testing.T) {
	e := newE2E(t)
	url, reached := e.paymentsHTTP([]string{"PAYMENTS_FAULT=handler=hang"}, "fault handler reached", "-wait", "100ms")

	// The first call hangs in the handler and holds the key at the server.
	first := exec.Command(e.agentctl, append([]string{"--ledger", filepath.Join(e.dir, "first.db"), "call", "--url", url, "--yes", "--key", "w-1"}, pay...)...)
	first.Env = e.env
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = first.Process.Kill()
		_ = first.Wait()
	})
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("the payments handler was never reached")
	}

	// A second agent with its own ledger sends the same key: the server
	// says in progress, the client retries, and the terminal says so.
	term := e.onTerminal(nil, append([]string{"--ledger", filepath.Join(e.dir, "second.db"), "call", "--url", url, "--yes", "--key", "w-1"}, pay...)...)
	term.waitFor(t, "retry 1 of 4 in ")
	code, screen := term.exit(t)
	if code != exitUnknown {
		t.Errorf("the second call exited %d; want %d (still in progress)\nscreen: %q", code, exitUnknown, screen)
	}
	if !strings.Contains(screen, "in_progress") || !strings.Contains(screen, "still in progress") {
		t.Errorf("the screen does not say why it retried and how it ended: %q", screen)
	}

	// A third call with the first one's ledger waits for it in the ledger.
	waiter := e.onTerminal(nil, append([]string{"--ledger", filepath.Join(e.dir, "first.db"), "call", "--url", url, "--yes", "--key", "w-1"}, pay...)...)
	waiter.waitFor(t, "waiting for another process running create_payment (key w-1)")
}

func TestInterruptedBeforeSendExits130(t *testing.T) {
	e := newE2E(t)
	term := e.onTerminal(nil, "call", "--server", "sleep 100", "--key", "i-1", "get_payment", "payment_id=x")
	term.waitFor(t, "connecting to sleep 100")
	if err := term.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code, screen := term.exit(t)
	if code != exitInterrupted || !strings.Contains(screen, "nothing ran") {
		t.Errorf("Ctrl-C while connecting: exit %d, screen %q; want exit %d saying nothing ran", code, screen, exitInterrupted)
	}
}

// paymentsHTTP runs the payments example on streamable HTTP with env and
// extra flags, and returns its URL and a channel closed once its stderr
// shows watch.
func (e *e2e) paymentsHTTP(env []string, watch string, args ...string) (string, <-chan struct{}) {
	e.t.Helper()
	cmd := exec.Command(e.payments, append([]string{"-db", e.payDB, "-http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append([]string{}, e.env...), env...)
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
	seen := make(chan struct{})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
			go func() {
				once := sync.OnceFunc(func() { close(seen) })
				for sc.Scan() { // keep draining so the server never blocks on stderr
					if strings.Contains(sc.Text(), watch) {
						once()
					}
				}
			}()
			return strings.TrimSpace(url), seen
		}
	}
	e.t.Fatalf("payments -http exited before listening: %v", sc.Err())
	return "", nil
}

// While the call waits for the server's answer, the terminal says for
// what (the server, the tool, the key) and for how long, the time moving
// on each second.
func TestStatusShowsWhatItWaitsForAndHowLong(t *testing.T) {
	e := newE2E(t)
	// --timeout counts from the start, connecting included, which takes
	// seconds on a busy machine: 10 s leaves the wait for the answer
	// several of them to count.
	term := e.onTerminal([]string{"PAYMENTS_FAULT=handler=hang"}, append([]string{"call", "--server", e.server, "--yes", "--key", "h-1", "--timeout", "10s"}, pay...)...)
	term.waitFor(t, "to answer create_payment (key h-1)…")
	code, screen := term.exit(t)
	if code != exitUnknown {
		t.Errorf("the hung call exited %d; want %d (sent, then --timeout)\nscreen: %q", code, exitUnknown, screen)
	}
	counted := map[string]bool{}
	for _, m := range regexp.MustCompile(`waiting for [^\r]+? to answer create_payment \(key h-1\)… (\d+)s`).FindAllStringSubmatch(screen, -1) {
		counted[m[1]] = true
	}
	if len(counted) < 2 {
		t.Errorf("the status line did not name the server and count the seconds (saw %d counts): %q", len(counted), screen)
	}
}

// Under --wait-approval the terminal says the call waits for a person,
// with the key and the command that approves it.
func TestStatusShowsTheApprovalItWaitsFor(t *testing.T) {
	e := newE2E(t)
	policy := e.queuePolicy("")
	term := e.onTerminal([]string{policy, "USER=alice"}, append([]string{"call", "--server", e.server, "--key", "a-1", "--wait-approval", "60s"}, pay...)...)
	term.waitFor(t, "waiting up to 1m0s for a person to approve create_payment (key a-1): agentctl ledger approve a-1")
	e.runEnv(nil, []string{policy, "USER=bob"}, "ledger", "approve", "a-1").wantExit(t, exitOK)
	code, screen := term.exit(t)
	if code != exitOK || !strings.Contains(screen, "key a-1: SUCCEEDED") {
		t.Errorf("after the approval: exit %d, screen %q; want the payment", code, screen)
	}
	if n := e.paymentsFor("a-1"); n != 1 {
		t.Errorf("payments for a-1 = %d; want 1", n)
	}
}

// --progress=plain writes what the call waits for as plain lines, each
// with the time elapsed, for a pipe; stdout stays the result alone.
// --progress=none draws nothing on a terminal.
func TestProgressPlainAndNone(t *testing.T) {
	e := newE2E(t)
	o := e.run(nil, append([]string{"call", "--server", e.server, "--yes", "--key", "p-1", "--progress=plain"}, pay...)...)
	o.wantExit(t, exitOK)
	if !strings.HasPrefix(o.stdout, "payment pay_") || strings.Count(o.stdout, "\n") != 1 {
		t.Errorf("stdout = %q; want the result alone", o.stdout)
	}
	if strings.ContainsAny(o.stderr, "\r\x1b") {
		t.Errorf("plain progress holds terminal codes: %q", o.stderr)
	}
	plainLine := regexp.MustCompile(`(?m)^\[ *\d+\.\ds\] (.*)$`)
	var said []string
	for _, m := range plainLine.FindAllStringSubmatch(o.stderr, -1) {
		said = append(said, m[1])
	}
	for _, want := range []string{"connecting to ", "to answer create_payment (key p-1)…"} {
		if !slices.ContainsFunc(said, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("plain progress lines %q; want one saying %q", said, want)
		}
	}
	e.run(nil, append([]string{"call", "--server", e.server, "--key", "p-2", "--progress=loud"}, pay...)...).
		wantExit(t, exitUsage, "--progress", "plain", "none")

	quiet := e.onTerminal(nil, append([]string{"call", "--server", e.server, "--yes", "--key", "p-3", "--progress=none"}, pay...)...)
	if code, screen := quiet.exit(t); code != exitOK || strings.Contains(screen, "connecting") || strings.Contains(screen, "\x1b[K") {
		t.Errorf("--progress=none on a terminal: exit %d, screen %q; want no status line", code, screen)
	}
}

//go:build unix

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/mattn/go-runewidth"
)

// ptyRun is one agentctl run on a pseudo-terminal of its own, as a person
// at a terminal runs it: stdin, stdout and stderr are the terminal (its
// controlling one), cols wide. What the run writes is read from the
// terminal's other end; type sends keys.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptmx interface {
		Write([]byte) (int, error)
	}
	mu   sync.Mutex // guards text
	text bytes.Buffer
	more chan struct{}
	done chan struct{}
}

func startPTY(t *testing.T, bin string, env []string, cols int, args ...string) *ptyRun {
	t.Helper()
	return startOnPTY(t, bin, env, cols, true, args...)
}

// startPTYOutput is startPTY with stdin not the terminal (no one types):
// stdout and stderr are the terminal.
func startPTYOutput(t *testing.T, bin string, env []string, cols int, args ...string) *ptyRun {
	t.Helper()
	return startOnPTY(t, bin, env, cols, false, args...)
}

func startOnPTY(t *testing.T, bin string, env []string, cols int, input bool, args ...string) *ptyRun {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{t: t, ptmx: ptmx, more: make(chan struct{}, 1), done: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"TERM=xterm"}, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if !input {
		cmd.Stdin = nil // /dev/null
		cmd.SysProcAttr.Ctty = 1
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child holds its own copies
	r.cmd = cmd
	go func() {
		defer close(r.done)
		buf := make([]byte, 4096)
		for {
			// Nothing answers terminal queries: agentctl sends none unless
			// it shows a full-screen prompt (TestSilentTerminalIsNotQueried).
			n, err := ptmx.Read(buf)
			r.mu.Lock()
			r.text.Write(buf[:n])
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		ptmx.Close()
	})
	return r
}

// screen is everything the run wrote so far, with the terminal's CRLF
// line ends as LF.
func (r *ptyRun) screen() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.ReplaceAll(r.text.String(), "\r\n", "\n")
}

// waitFor returns once the screen shows want.
func (r *ptyRun) waitFor(want string) {
	r.t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(r.screen(), want) {
		select {
		case <-r.more:
		case <-r.done:
			if !strings.Contains(r.screen(), want) {
				r.t.Fatalf("the run ended without showing %q; it showed %q", want, r.screen())
			}
		case <-deadline:
			r.t.Fatalf("the terminal never showed %q; it showed %q", want, r.screen())
		}
	}
}

// typeLine types s and Enter.
func (r *ptyRun) typeLine(s string) {
	r.t.Helper()
	if _, err := r.ptmx.Write([]byte(s + "\r")); err != nil {
		r.t.Fatal(err)
	}
}

// exit waits for the run to end and returns its exit code and screen.
func (r *ptyRun) exit() (int, string) {
	r.t.Helper()
	err := r.cmd.Wait()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		// The terminal stays open while a grandchild holds it; what was
		// written before the exit has been read.
	}
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return code, r.screen()
}

// wideLines returns the lines of screen wider than cols, colour codes and
// the status line's redraws aside.
func wideLines(screen string, cols int) []string {
	var wide []string
	for _, line := range strings.Split(screen, "\n") {
		if i := strings.LastIndex(line, "\r"); i >= 0 {
			line = line[i+1:]
		}
		if runewidth.StringWidth(stripANSI(line)) > cols {
			wide = append(wide, line)
		}
	}
	return wide
}

// stripANSI removes CSI escape sequences (colours, erase line) and OSC
// ones (terminal queries).
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == ']' {
			end := strings.Index(s[i:], "\x1b\\")
			if end < 0 {
				break
			}
			i += end + 1
			continue
		}
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

//go:build linux

package terminal

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal, so the full-screen
// form runs against a real terminal device.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("naming the pty: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("opening the pty: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatalf("sizing the pty: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// screen collects what the form draws and lets the test wait for a text.
type screen struct {
	mu      sync.Mutex // guards text
	text    strings.Builder
	changed chan struct{}
}

func watch(f *os.File) *screen {
	s := &screen{changed: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			s.mu.Lock()
			s.text.Write(buf[:n])
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		seen := strings.Contains(s.text.String(), want)
		s.mu.Unlock()
		if seen {
			return
		}
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("the form never showed %q", want)
		}
	}
}

func TestTerminalFullScreen(t *testing.T) {
	tests := []struct {
		name string
		keys [][2]string // wait for [0], then type [1]
		want confirm.Answer
		said string // the decision left on screen after the form closed
	}{
		{"approve for the session", [][2]string{{"Approve once", "\x1b[B"}, {"Approve once", "\r"}},
			confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "carol", Via: "terminal"}, "Approved for this session: create_payment"},
		{"enter on the default approves once", [][2]string{{"Approve once", "\r"}},
			confirm.Answer{Decision: ledger.DecisionApproved, By: "carol", Via: "terminal"}, "Approved once: create_payment"},
		{"deny asks why", [][2]string{{"Approve once", "\x1b[B\x1b[B\r"}, {"Reason for denying", "card expired\r"}},
			confirm.Answer{Decision: ledger.DecisionDenied, By: "carol", Via: "terminal", Reason: "card expired"}, "Denied: create_payment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			master, slave := openPTY(t)
			scr := watch(master)
			term := &Prompt{In: slave, Out: slave, User: "carol"}
			type result struct {
				a   confirm.Answer
				err error
			}
			done := make(chan result, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go func() {
				a, err := term.Confirm(ctx, sampleRequest())
				done <- result{a, err}
			}()
			for _, k := range tc.keys {
				scr.waitFor(t, k[0])
				if _, err := master.WriteString(k[1]); err != nil {
					t.Fatal(err)
				}
			}
			r := <-done
			if r.err != nil || r.a != tc.want {
				t.Errorf("Confirm on a terminal = %+v, %v; want %+v", r.a, r.err, tc.want)
			}
			scr.waitFor(t, "order-42") // the summary was on screen
			scr.waitFor(t, tc.said)
		})
	}
}

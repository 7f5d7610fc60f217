//go:build linux

package terminal

import (
	"context"
	"errors"
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
	s.waitForSince(t, 0, want)
}

// mark is how much the screen holds now, for waitForSince.
func (s *screen) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.Len()
}

// waitForSince waits for want drawn after mark.
func (s *screen) waitForSince(t *testing.T, mark int, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		seen := strings.Contains(s.text.String()[mark:], want)
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

// confirmAsync runs p.Confirm in a goroutine and returns its outcome.
func confirmAsync(ctx context.Context, p *Prompt) <-chan confirmResult {
	done := make(chan confirmResult, 1)
	go func() {
		a, err := p.Confirm(ctx, sampleRequest())
		done <- confirmResult{a, err}
	}()
	return done
}

type confirmResult struct {
	a   confirm.Answer
	err error
}

// Prompts in a row on one terminal: each form gets every key typed while
// it is on screen, none is left to a reader of an earlier form, and the
// terminal is back in the mode it was in (cooked, echoing) afterwards.
func TestTerminalFullScreenInARow(t *testing.T) {
	master, slave := openPTY(t)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	scr := watch(master)
	p := &Prompt{In: slave, Out: slave, User: "carol"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	steps := []struct {
		keys [][2]string
		want confirm.Answer
		said string
	}{
		{[][2]string{{"Approve once", "\r"}},
			confirm.Answer{Decision: ledger.DecisionApproved, By: "carol", Via: "terminal"}, "Approved once: create_payment"},
		{[][2]string{{"Approve once", "\x1b[B\x1b[B\r"}, {"Reason for denying", "wrong card\r"}},
			confirm.Answer{Decision: ledger.DecisionDenied, By: "carol", Via: "terminal", Reason: "wrong card"}, "Denied: create_payment"},
		{[][2]string{{"Approve once", "\x1b[B\r"}},
			confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "carol", Via: "terminal"}, "Approved for this session: create_payment"},
		{[][2]string{{"Approve once", "\r"}},
			confirm.Answer{Decision: ledger.DecisionApproved, By: "carol", Via: "terminal"}, "Approved once: create_payment"},
	}
	for i, st := range steps {
		mark := scr.mark()
		done := confirmAsync(ctx, p)
		for _, k := range st.keys {
			scr.waitForSince(t, mark, k[0])
			mark = scr.mark()
			if _, err := master.WriteString(k[1]); err != nil {
				t.Fatal(err)
			}
		}
		r := <-done
		if r.err != nil || r.a != st.want {
			t.Fatalf("prompt %d in a row = %+v, %v; want %+v", i+1, r.a, r.err, st.want)
		}
		scr.waitForSince(t, mark, st.said)
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal modes after the prompts = lflag %#x iflag %#x oflag %#x; want them as before: %#x %#x %#x",
			after.Lflag, after.Iflag, after.Oflag, before.Lflag, before.Iflag, before.Oflag)
	}
}

// Ctrl-C on the form is no answer, not a denial, and the terminal is the
// next prompt's.
func TestTerminalFullScreenCtrlC(t *testing.T) {
	master, slave := openPTY(t)
	scr := watch(master)
	p := &Prompt{In: slave, Out: slave, User: "carol"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := confirmAsync(ctx, p)
	scr.waitFor(t, "Approve once")
	if _, err := master.WriteString("\x03"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; !errors.Is(r.err, confirm.ErrAborted) {
		t.Fatalf("Confirm after Ctrl-C = %+v, %v; want confirm.ErrAborted", r.a, r.err)
	}
	mark := scr.mark()
	done = confirmAsync(ctx, p)
	scr.waitForSince(t, mark, "Approve once")
	if _, err := master.WriteString("\r"); err != nil {
		t.Fatal(err)
	}
	want := confirm.Answer{Decision: ledger.DecisionApproved, By: "carol", Via: "terminal"}
	if r := <-done; r.err != nil || r.a != want {
		t.Errorf("Confirm after an aborted one = %+v, %v; want %+v", r.a, r.err, want)
	}
}

// A prompt whose context ends while its form is on screen lets go of the
// terminal: the next prompt on the same terminal gets the keys.
func TestTerminalFullScreenCancelThenAsk(t *testing.T) {
	master, slave := openPTY(t)
	scr := watch(master)
	p := &Prompt{In: slave, Out: slave, User: "carol"}
	ctx, cancel := context.WithCancel(context.Background())
	done := confirmAsync(ctx, p)
	scr.waitFor(t, "Approve once")
	cancel()
	if r := <-done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Confirm after its context ended = %+v, %v; want context.Canceled", r.a, r.err)
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	mark := scr.mark()
	done = confirmAsync(ctx2, p)
	scr.waitForSince(t, mark, "Approve once")
	if _, err := master.WriteString("\x1b[B\r"); err != nil {
		t.Fatal(err)
	}
	want := confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "carol", Via: "terminal"}
	if r := <-done; r.err != nil || r.a != want {
		t.Errorf("Confirm after a cancelled one = %+v, %v; want %+v", r.a, r.err, want)
	}
}

// Plain prompts on a terminal file end with their context too, and the
// next prompt reads the line typed for it.
func TestTerminalAccessibleOnTTYCancel(t *testing.T) {
	master, slave := openPTY(t)
	scr := watch(master)
	p := &Prompt{In: slave, Out: slave, Accessible: true, User: "dave"}
	ctx, cancel := context.WithCancel(context.Background())
	done := confirmAsync(ctx, p)
	scr.waitFor(t, "Enter a number between 1 and 3")
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Confirm after its context ended = %+v, %v; want context.Canceled", r.a, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a plain prompt on a terminal did not return after its context ended")
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	mark := scr.mark()
	done = confirmAsync(ctx2, p)
	scr.waitForSince(t, mark, "Enter a number between 1 and 3")
	if _, err := master.WriteString("2\n"); err != nil {
		t.Fatal(err)
	}
	want := confirm.Answer{Decision: ledger.DecisionApprovedSession, By: "dave", Via: "terminal"}
	if r := <-done; r.err != nil || r.a != want {
		t.Errorf("Confirm after a cancelled one = %+v, %v; want %+v", r.a, r.err, want)
	}
}

//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// A terminal that never answers: agentctl commands that show no prompt ask
// it nothing, so nothing waits for an answer that never comes. The prompt's
// terminal UI library (huh v1, through bubbletea v1's package init) used to
// ask every start for the background colour and the cursor position and
// wait 5 s for the reply.
func TestSilentTerminalIsNotQueried(t *testing.T) {
	agentctl, _ := binaries(t)
	// The stall was 5 s, waiting for replies to the queries checked below:
	// a query sent is the fault, however long the wait.
	for _, args := range [][]string{{"version"}, {"--help"}, {"completion", "bash"}} {
		name := strings.Join(args, " ")
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, agentctl, args...)
		cmd.Env = []string{"TERM=xterm-256color", "COLORTERM=truecolor", "HOME=" + t.TempDir()}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close() // the child holds its own copies
		var screen bytes.Buffer
		read := make(chan struct{})
		go func() {
			defer close(read)
			_, _ = io.Copy(&screen, ptmx) // ends with EIO once the child is gone; nothing is ever written back
		}()
		err = cmd.Wait()
		<-read
		ptmx.Close()
		cancel()
		if err != nil {
			t.Fatalf("agentctl %s on a silent terminal: %v (it showed %q)", name, err, screen.String())
		}
		for _, query := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n", "\x1b[c", "\x1b[?u", "\x1bP+q"} {
			if strings.Contains(screen.String(), query) {
				t.Errorf("agentctl %s sent the terminal query %q; a terminal that does not answer makes it wait", name, query)
			}
		}
		if !strings.Contains(screen.String(), "agentctl") {
			t.Errorf("agentctl %s showed %q; want its output", name, screen.String())
		}
	}
}

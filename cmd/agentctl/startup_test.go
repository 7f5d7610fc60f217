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

// A terminal that never answers: agentctl version (and the other commands
// that show no prompt) asks it nothing, so nothing waits for an answer
// that never comes. The terminal UI library of the prompt (huh v1, through
// bubbletea's package init) used to query the background colour and the
// cursor position at every start and wait 5 s for the reply.
func TestSilentTerminalIsNotQueried(t *testing.T) {
	agentctl, _ := binaries(t)
	for _, args := range [][]string{{"version"}, {"--help"}, {"completion", "bash"}} {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, agentctl, args...)
		cmd.Env = []string{"TERM=xterm", "HOME=" + t.TempDir()}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		var screen bytes.Buffer
		read := make(chan struct{})
		go func() {
			defer close(read)
			_, _ = io.Copy(&screen, ptmx) // ends with EIO once the child is gone
		}()
		err = cmd.Wait()
		ptmx.Close()
		<-read
		cancel()
		if err != nil {
			t.Fatalf("agentctl %s on a silent terminal: %v (it showed %q)", strings.Join(args, " "), err, screen.String())
		}
		for _, query := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n", "\x1b[c"} {
			if strings.Contains(screen.String(), query) {
				t.Errorf("agentctl %s sent the terminal query %q; a terminal that does not answer makes it wait", strings.Join(args, " "), query)
			}
		}
	}
}

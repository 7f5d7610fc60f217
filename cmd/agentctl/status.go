package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// status is the one line on a terminal's stderr that says what a command
// is doing while it waits: connecting, waiting for another process, the
// next retry, the server's progress, a confirmation. Each update redraws
// the line; clear removes it before anything else is printed. A nil
// *status is quiet: under --json, or when stderr is no terminal, nothing
// but results and errors is printed.
type status struct {
	w     io.Writer
	width func() int

	mu    sync.Mutex // guards shown; updates come from the SDK's goroutines too
	shown bool
}

func newStatus(w io.Writer, on bool, width func() int) *status {
	if !on {
		return nil
	}
	return &status{w: w, width: width}
}

// set draws the line, cut to the terminal's width.
func (s *status) set(format string, args ...any) {
	if s == nil {
		return
	}
	line := printable(fmt.Sprintf(format, args...), false)
	if w := s.width() - 1; w > 0 && utf8.RuneCountInString(line) > w {
		line = string([]rune(line)[:w-1]) + "…"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "\r\x1b[K%s", line)
	s.shown = true
}

// clear removes the line, so the next output starts on a clean line.
func (s *status) clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
}

// progress draws an MCP progress notification: a bar when the total is
// known, else the count.
func (s *status) progress(tool string, done, total float64, msg string) {
	if s == nil {
		return
	}
	if msg != "" {
		msg = " " + msg
	}
	if total <= 0 {
		s.set("%s: %g done%s", tool, done, msg)
		return
	}
	s.set("%s %s%s", tool, progressBar(done, total, 20), msg)
}

// progressBar renders done of total as [#####     ] 25%.
func progressBar(done, total float64, width int) string {
	frac := min(max(done/total, 0), 1)
	n := int(frac * float64(width))
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(" ", width-n), 100*frac)
}

// retrying says which attempt failed and how long the next one waits.
func (s *status) retrying(tool string, attempt, of int, wait time.Duration, why string) {
	s.set("%s: attempt %d failed (%s); retry %d of %d in %s", tool, attempt, why, attempt, of-1, wait.Round(time.Millisecond))
}

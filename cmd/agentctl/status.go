package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// How call shows what it waits for (call --progress).
const (
	progressAuto  = "auto"  // the status line on a terminal, else nothing
	progressPlain = "plain" // a line per change, for pipes and logs
	progressNone  = "none"
)

// status says on stderr what a command is waiting for while it waits
// (connecting, the upstream's answer, another process running the same
// operation, a person's approval, the next retry, the server's progress)
// and for how long. On a terminal it is one line, redrawn every second
// with the time elapsed and erased before anything else is printed. Plain
// (--progress=plain) writes one line per change instead, each with the
// elapsed time, and repeats a wait that lasts every plainEvery, so a log
// shows the command is alive. A nil *status is quiet: under --json, with
// --progress=none, or when stderr is no terminal and plain was not asked.
type status struct {
	w     io.Writer
	width func() int
	plain bool
	start time.Time
	now   func() time.Time

	mu      sync.Mutex // guards the fields below; updates come from the SDK's goroutines too
	text    string     // what the command waits for; "" while nothing is shown
	shown   bool       // a terminal line is on the screen
	printed time.Time  // when plain last wrote a line
	ticking bool
	stop    chan struct{}
}

// plainEvery is how often plain repeats a wait that goes on.
const plainEvery = 30 * time.Second

// plainProgressEvery is the least time between two plain lines of the
// server's progress.
const plainProgressEvery = time.Second

func newStatus(w io.Writer, on, plain bool, width func() int) *status {
	if !on && !plain {
		return nil
	}
	return &status{w: w, width: width, plain: plain, start: time.Now(), now: time.Now, stop: make(chan struct{})}
}

// set says what the command now waits for.
func (s *status) set(format string, args ...any) {
	if s == nil {
		return
	}
	text := printable(fmt.Sprintf(format, args...), false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain {
		if text != s.text {
			s.text = text
			s.line()
		}
	} else {
		s.text = text
		s.draw()
	}
	if !s.ticking {
		s.ticking = true
		go s.tick()
	}
}

// draw redraws the terminal line: what it waits for and the time elapsed,
// cut to the terminal's width. s.mu is held.
func (s *status) draw() {
	if s.text == "" {
		return
	}
	el := " " + elapsedText(s.now().Sub(s.start))
	text := s.text
	if w := s.width() - 1 - utf8.RuneCountInString(el); w > 0 && utf8.RuneCountInString(text) > w {
		// Cut the middle (a long command line), keeping the start and
		// the end, where the key and the elapsed time are.
		r := []rune(text)
		tail := w / 3
		head := max(w-tail-1, 1)
		text = string(r[:head]) + "…" + string(r[len(r)-tail:])
	}
	line := text + el
	s.write("\r\x1b[K%s", line)
	s.shown = true
}

// write writes to the status line's stream, stderr. The error is
// dropped: the line only shows what is being waited for, and stderr has
// nowhere to report its own failure.
func (s *status) write(format string, args ...any) { _, _ = fmt.Fprintf(s.w, format, args...) }

// line writes one plain line. s.mu is held.
func (s *status) line() {
	now := s.now()
	s.write("[%5.1fs] %s\n", now.Sub(s.start).Seconds(), clip(s.text, 300))
	s.printed = now
}

// tick redraws the terminal line every second (the elapsed time moves
// on), or repeats a plain wait that lasts, until close.
func (s *status) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		switch {
		case !s.plain && s.shown:
			s.draw()
		case s.plain && s.text != "" && s.now().Sub(s.printed) >= plainEvery:
			s.line()
		}
		s.mu.Unlock()
	}
}

// clear removes the line, so the next output starts on a clean line, and
// forgets what was waited for until the next set.
func (s *status) clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = ""
	if s.shown {
		s.write("\r\x1b[K")
		s.shown = false
	}
}

// close clears the line and stops the redraws.
func (s *status) close() {
	if s == nil {
		return
	}
	s.clear()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ticking {
		close(s.stop)
		s.ticking = false
	}
}

// progress draws an MCP progress notification: a bar when the total is
// known, else the count. Plain writes at most one a second, and the last.
func (s *status) progress(tool string, done, total float64, msg string) {
	if s == nil {
		return
	}
	if s.plain {
		s.mu.Lock()
		recent := s.now().Sub(s.printed) < plainProgressEvery
		s.mu.Unlock()
		if recent && (total <= 0 || done < total) {
			return
		}
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

// retrying says which attempt failed and when the next one goes.
func (s *status) retrying(tool string, attempt, of int, wait time.Duration, why string) {
	s.set("%s: attempt %d failed (%s); retry %d of %d in %s", tool, attempt, why, attempt, of-1, wait.Round(time.Millisecond))
}

// elapsedText is a wait's length as a person reads it: 0s, 12s, 3m05s.
func elapsedText(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

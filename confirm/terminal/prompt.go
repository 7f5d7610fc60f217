package terminal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"charm.land/huh/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

// Prompt asks a person with a huh form: approve once, approve for this
// session, or deny (then it asks for a reason). It is a confirm.Confirmer.
//
// In and Out default to the controlling terminal (/dev/tty), not to stdin
// and stdout, because under `agentctl proxy` those carry the MCP stream.
// Without a controlling terminal Confirm returns confirm.ErrNoConfirmer. When In is
// set and Out is not, Out is os.Stderr.
//
// Accessible selects huh's accessible mode: numbered plain prompts, one per
// line, for screen readers and for scripts and tests that answer over a
// pipe. It is also used whenever In is not a terminal, since the full-screen
// form needs one. The form starts on Approve once; in accessible mode the
// default answer (an empty line) is Deny. The decision is printed after the
// form closes.
//
// One Prompt shows one prompt at a time; concurrent calls wait their turn.
// The zero value asks on the controlling terminal.
type Prompt struct {
	In         io.Reader
	Out        io.Writer
	Accessible bool
	// User names who answers in Answer.By; when empty, the OS account
	// this process runs as, found by its uid (never an environment
	// variable, which anyone can set).
	User string
	// Width is the number of columns the summary is wrapped to, at word
	// boundaries (the terminal's width when zero, else 80).
	Width int

	once sync.Once
	turn chan struct{} // holds a token while a prompt is on screen
}

// The choices, as the form values (the same as confirm's elicitation enum).
const (
	choiceOnce    = "approve_once"
	choiceSession = "approve_session"
	choiceDeny    = "deny"
)

// Confirm shows req and waits for a choice or for ctx to end.
func (t *Prompt) Confirm(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
	if t == nil {
		return confirm.Answer{}, confirm.ErrNoConfirmer
	}
	t.once.Do(func() { t.turn = make(chan struct{}, 1) })
	select {
	case t.turn <- struct{}{}:
	case <-ctx.Done():
		return confirm.Answer{}, fmt.Errorf("terminal: waiting for the terminal: %w", ctx.Err())
	}
	if err := ctx.Err(); err != nil {
		<-t.turn
		return confirm.Answer{}, fmt.Errorf("terminal: terminal prompt: %w", err)
	}
	in, out, closeTTY, err := t.open()
	if err != nil {
		<-t.turn
		return confirm.Answer{}, err
	}
	type result struct {
		a   confirm.Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The turn is released only when the prompt has stopped reading,
		// so a later prompt never shares the input with an abandoned one.
		defer func() { <-t.turn }()
		defer closeTTY()
		a, err := t.ask(ctx, in, out, req)
		done <- result{a, err}
	}()
	select {
	case r := <-done:
		return r.a, r.err
	case <-ctx.Done():
		// ask stops reading a file when ctx ends and then the terminal is
		// closed (never while a read is in flight). A caller-supplied
		// reader that is not a file stays blocked until it yields; its
		// answer is discarded.
		return confirm.Answer{}, fmt.Errorf("terminal: terminal prompt: %w", ctx.Err())
	}
}

// open returns the input and output to use and a function that closes what
// open opened.
func (t *Prompt) open() (io.Reader, io.Writer, func(), error) {
	if t.In != nil {
		out := t.Out
		if out == nil {
			out = os.Stderr
		}
		return t.In, out, func() {}, nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("terminal: opening the terminal: %v: %w", err, confirm.ErrNoConfirmer)
	}
	closeTTY := func() { _ = tty.Close() } // the prompt is over; nothing to do if closing failed
	var out io.Writer = tty
	if t.Out != nil {
		out = t.Out
	}
	return tty, out, closeTTY, nil
}

func (t *Prompt) ask(ctx context.Context, in io.Reader, out io.Writer, req confirm.Request) (confirm.Answer, error) {
	accessible := t.Accessible || !isTerminal(in)
	var lines *lineReader
	if f, ok := in.(*os.File); ok && accessible {
		// Plain prompts do not watch ctx; the file's reads end with it.
		src, err := newTTYInput(f)
		if err != nil {
			return confirm.Answer{}, fmt.Errorf("terminal: reading %s: %w", f.Name(), err)
		}
		defer src.close()
		defer context.AfterFunc(ctx, src.stop)()
		in = src
	}
	if accessible {
		// huh's accessible prompts wrap the reader in a fresh bufio.Scanner
		// per field; feeding them one line per Read keeps a second field's
		// answer from being swallowed by the first field's buffer.
		lines = &lineReader{r: bufio.NewReader(in)}
		in = lines
	}
	if _, err := fmt.Fprint(out, "\n"+wrap(req.Summary(), t.width(out))); err != nil {
		return confirm.Answer{}, fmt.Errorf("terminal: writing to the terminal: %w", err)
	}
	by := t.user()

	// The full-screen form starts on "Approve once"; plain prompts keep
	// Deny as the default, since a script's empty line must not approve.
	choice := choiceDeny
	if !accessible {
		choice = choiceOnce
	}
	server := ""
	if req.Server != "" {
		server = " on " + safe(req.Server)
	}
	sel := huh.NewSelect[string]().
		Title(fmt.Sprintf("Run %s%s?", safe(req.Tool), server)).
		Options(
			huh.NewOption("Approve once", choiceOnce),
			huh.NewOption("Approve for this session (this tool, until the policy changes or the approval expires)", choiceSession),
			huh.NewOption("Deny", choiceDeny),
		).
		Value(&choice)
	if err := t.run(ctx, huh.NewForm(huh.NewGroup(sel)), in, out, accessible); err != nil {
		if errors.Is(err, huh.ErrUserAborted) {
			// Ctrl-C is no answer, not a denial: nothing final is recorded.
			return confirm.Answer{}, confirm.ErrAborted
		}
		return confirm.Answer{}, err
	}
	if lines.inputEnded() {
		return confirm.Answer{}, confirm.ErrNoAnswer
	}
	// The form clears itself when it closes: the decision stays on screen.
	keyNote := ""
	if req.Key != "" {
		keyNote = " (key " + safe(req.Key) + ")"
	}
	switch choice {
	case choiceOnce:
		note(out, "Approved once: %s%s%s\n", safe(req.Tool), server, keyNote)
		return confirm.Answer{Decision: ledger.DecisionApproved, By: by, Via: "terminal"}, nil
	case choiceSession:
		note(out, "Approved for this session: %s%s%s\n", safe(req.Tool), server, keyNote)
		return confirm.Answer{Decision: ledger.DecisionApprovedSession, By: by, Via: "terminal"}, nil
	}

	var reason string
	in2 := huh.NewInput().Title("Reason for denying (optional):").Value(&reason)
	if err := t.run(ctx, huh.NewForm(huh.NewGroup(in2)), in, out, accessible); err != nil &&
		!errors.Is(err, huh.ErrUserAborted) {
		return confirm.Answer{}, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "denied at the terminal"
	}
	note(out, "Denied: %s%s%s: %s\n", safe(req.Tool), server, keyNote, safe(reason))
	return confirm.Answer{Decision: ledger.DecisionDenied, By: by, Via: "terminal", Reason: reason}, nil
}

// note keeps the decision on screen after the form cleared itself. Its
// error is dropped: the person answered on this terminal, and the answer
// stands whether or not the line shows.
func note(out io.Writer, format string, args ...any) { _, _ = fmt.Fprintf(out, format, args...) }

func (t *Prompt) run(ctx context.Context, f *huh.Form, in io.Reader, out io.Writer, accessible bool) error {
	var err error
	if accessible {
		// huh v2 styles even its plain prompts; the writer keeps the
		// colours a terminal can show and drops them for a pipe or a file
		// (and under NO_COLOR).
		out = colorprofile.NewWriter(out, os.Environ())
		err = f.WithInput(in).WithOutput(out).WithAccessible(true).WithShowHelp(false).RunWithContext(ctx)
	} else {
		err = runFullScreen(ctx, f, in.(*os.File), out)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("terminal: terminal prompt: %w", ctx.Err())
	}
	if err != nil && !errors.Is(err, huh.ErrUserAborted) {
		return fmt.Errorf("terminal: terminal prompt: %w", err)
	}
	return err
}

// runFullScreen runs f on the terminal tty. The form reads through a
// ttyInput that is closed before runFullScreen returns, so no reader of this
// form is left to take the next form's keys or to race with closing tty.
// The form gets a plain reader, not the terminal, so the raw mode it needs
// is set here.
func runFullScreen(ctx context.Context, f *huh.Form, tty *os.File, out io.Writer) error {
	src, err := newTTYInput(tty)
	if err != nil {
		return fmt.Errorf("reading %s: %w", tty.Name(), err)
	}
	defer src.close()
	state, err := term.MakeRaw(tty.Fd())
	if err != nil {
		return fmt.Errorf("putting %s in raw mode: %w", tty.Name(), err)
	}
	err = f.WithInput(src).WithOutput(out).WithShowHelp(true).RunWithContext(ctx)
	src.close() // returns once bubbletea's reader has let go; then the mode goes back
	if rerr := term.Restore(tty.Fd(), state); rerr != nil && err == nil {
		return fmt.Errorf("restoring %s after the form: %w", tty.Name(), rerr)
	}
	return err
}

func (t *Prompt) user() string {
	if t.User != "" {
		return t.User
	}
	return confirm.Account()
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// lineReader hands out at most one line per Read. When its input ends it
// notes that and serves a few empty lines: huh v2's accessible select
// indexes its options with the last line it read when the input ends, which
// after an out-of-range line would panic; an empty line selects the default
// (Deny) instead, and Confirm reports confirm.ErrNoAnswer because the input ended.
type lineReader struct {
	r       *bufio.Reader
	pending []byte
	open    bool // the last line handed out had no newline yet
	ended   bool
	blanks  int
}

// maxBlanks bounds the empty lines served after the end, so a prompt that
// rejected empty input could not loop forever.
const maxBlanks = 4

func (l *lineReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(l.pending) == 0 {
		line, err := l.r.ReadSlice('\n')
		switch {
		case len(line) > 0:
			l.pending = append(l.pending[:0], line...)
			l.open = line[len(line)-1] != '\n'
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
			return 0, nil
		case errors.Is(err, io.EOF) && l.open:
			// A last line without a newline is still an answer.
			l.open = false
			p[0] = '\n'
			return 1, nil
		case errors.Is(err, io.EOF) && l.blanks < maxBlanks:
			l.ended = true
			l.blanks++
			p[0] = '\n'
			return 1, nil
		default:
			l.ended = true
			return 0, err
		}
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// inputEnded reports whether the input ran out (always false for the
// full-screen form, which reads the terminal directly).
func (l *lineReader) inputEnded() bool { return l != nil && l.ended }

// safe returns s unchanged when every character prints, else a quoted Go
// string with escapes, so a tool or server name cannot move the cursor or
// recolour the terminal (as confirm.Request.Summary does for its values).
func safe(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r) }) < 0 {
		return s
	}
	return strconv.QuoteToGraphic(s)
}

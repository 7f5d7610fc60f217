package caller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/mcpledger/mcpledger/retry"
)

// Link is an adapter's hold on one MCP server through its SDK: the current
// session (S, the SDK's session or client pointer), opened on first use and
// replaced through Connect when an attempt shows it dead, and the server's
// tool list, cached for ToolsTTL or until the server says it changed. The
// adapter gives it the SDK's operations as function fields, sets them
// before the first call and never changes them; Link itself knows no SDK.
// It is safe for concurrent use.
type Link[S comparable] struct {
	// Connect opens a new session to the same server. Nil: a dead session
	// is not replaced (the adapter was handed one session).
	Connect func(ctx context.Context) (S, error)
	// Close ends a session; a dead session's close error is logged, and
	// with ChildProcess it tells whether the server process exited.
	Close func(s S) error
	// Dead reports whether err, an attempt's failure, shows its session
	// can carry no more requests.
	Dead func(err error) bool
	// ListTools reads the server's tool list on s.
	ListTools func(ctx context.Context, s S) ([]*Tool, error)
	// ChildProcess: closing a session waits for its server, a child
	// process over stdio (Options.ChildProcess with go-sdk's
	// CommandTransport). A nil close error, or the process's own exit
	// status, then means nothing sent on it can still take effect, and
	// Exited says so.
	ChildProcess bool
	Now          func() time.Time // time.Now when nil
	Log          *slog.Logger     // discarded when nil

	// mu guards cur, tools and toolsAt.
	mu      sync.Mutex
	cur     S
	tools   map[string]*Tool // nil: not loaded
	toolsAt time.Time

	ended endedSessions[S]
}

// ToolsTTL bounds how stale a Link's cached tool list may get when the
// server sends no list-changed notifications.
const ToolsTTL = time.Minute

// ErrNoConnect: the session is gone and the adapter was given no way to
// open another. Nothing was sent.
var ErrNoConnect = errors.New("caller: the session is closed and no connect function was given; make the client with Dial to have it reconnect")

// Use makes s the current session and drops the cached tool list.
func (l *Link[S]) Use(s S) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur, l.tools = s, nil
}

// Current is the current session; the zero S when there is none.
func (l *Link[S]) Current() S {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// End takes the current session out and closes it: the adapter is
// closing. Nil when there was none.
func (l *Link[S]) End() error {
	l.mu.Lock()
	s := l.cur
	var zero S
	l.cur, l.tools = zero, nil
	l.mu.Unlock()
	if s == zero || l.Close == nil {
		return nil
	}
	return l.Close(s)
}

// Open is the current session, or a new one when there is none.
func (l *Link[S]) Open(ctx context.Context) (S, error) {
	if s := l.Current(); s != *new(S) {
		return s, nil
	}
	return l.Reconnect(ctx, *new(S))
}

// Reconnect replaces dead (the zero S: no session) when it is still the
// current session, closing it first, and returns the session now in
// place. Concurrent attempts that saw the same session die make one new
// session between them.
func (l *Link[S]) Reconnect(ctx context.Context, dead S) (S, error) {
	var zero S
	if l.Connect == nil {
		return zero, ErrNoConnect
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != dead && l.cur != zero {
		return l.cur, nil
	}
	if dead != zero && l.Close != nil {
		err := l.Close(dead)
		if err != nil {
			l.log().Debug("close dead session", "err", err)
		}
		if l.ChildProcess && exitedOn(err) {
			l.ended.add(dead)
		}
	}
	s, err := l.Connect(ctx)
	if err != nil {
		l.cur = zero
		if dead == zero {
			return zero, fmt.Errorf("caller: connect: %w", err)
		}
		return zero, fmt.Errorf("caller: reconnect: %w", err)
	}
	l.cur, l.tools = s, nil
	return s, nil
}

// Repair reconnects when err shows that via (Attempt.Via: the session the
// attempt went out on) is dead; a Conn's Repair calls it.
func (l *Link[S]) Repair(ctx context.Context, via any, err error) {
	s, ok := via.(S)
	if !ok || s == *new(S) || l.Connect == nil || l.Dead == nil || !l.Dead(err) {
		return
	}
	if _, rerr := l.Reconnect(ctx, s); rerr != nil {
		l.log().Warn("reconnect failed", "err", rerr)
	}
}

// Repeatable runs fn, a request that is safe to send twice (a list, a
// read, a prompt; never a tool call), on the current session, opening one
// when there is none. When the session turns out to be dead and the Link
// can connect, it runs fn once more on a new session, which later calls
// use too.
func (l *Link[S]) Repeatable(ctx context.Context, fn func(ctx context.Context, s S) error) error {
	s, err := l.Open(ctx)
	if err != nil {
		return err
	}
	err = fn(ctx, s)
	if err == nil || l.Connect == nil || l.Dead == nil || !l.Dead(err) || ctx.Err() != nil {
		return err
	}
	l.log().Info("session gone; reconnecting", "err", err)
	s, rerr := l.Reconnect(ctx, s)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	return fn(ctx, s)
}

// Tool is the server's definition of name, nil when the server does not
// list it; a Conn's Tool calls it. The list is read on the current session
// and kept for ToolsTTL, unless the session changes or ToolsChanged drops
// it first.
func (l *Link[S]) Tool(ctx context.Context, name string) (*Tool, error) {
	now := l.now()
	l.mu.Lock()
	tools, at, s := l.tools, l.toolsAt, l.cur
	l.mu.Unlock()
	if tools != nil && now.Sub(at) < ToolsTTL {
		if t, ok := tools[name]; ok {
			return t, nil
		}
	}
	if s == *new(S) {
		return nil, fmt.Errorf("caller: list tools: %w", retry.ErrConnectionClosed)
	}
	list, err := l.ListTools(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("caller: list tools: %w", err)
	}
	fresh := make(map[string]*Tool, len(list))
	for _, t := range list {
		fresh[t.Name] = t
	}
	l.mu.Lock()
	if l.cur == s {
		l.tools, l.toolsAt = fresh, now
	}
	l.mu.Unlock()
	return fresh[name], nil
}

// ToolsChanged drops the cached tool list when s is the current session,
// or whatever the session when s is the zero S: the server said its list
// changed.
func (l *Link[S]) ToolsChanged(s S) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s == *new(S) || s == l.cur {
		l.tools = nil
	}
}

// Exited reports whether via (Attempt.Via) is a session that was closed
// with its server process gone (ChildProcess); a Conn that is an Exiter
// calls it.
func (l *Link[S]) Exited(via any) bool {
	s, ok := via.(S)
	return ok && l.ended.has(s)
}

func (l *Link[S]) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

func (l *Link[S]) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

// exitedOn reports whether a child process's session that closed with err
// has its process gone: closing waits for the process, so a nil error or
// the process's own exit status (killed, or a non-zero exit) means it
// exited; any other error (it did not exit even after SIGKILL) means it
// may still run.
func exitedOn(err error) bool {
	_, exited := errs.AsType[*exec.ExitError](err)
	return err == nil || exited
}

// endedSessions remembers the last sessions closed with their server
// process gone. The zero value is ready to use.
type endedSessions[S comparable] struct {
	// mu guards list.
	mu   sync.Mutex
	list []S
}

// maxEnded bounds the sessions remembered: a call sent on an older one
// waits for its quiet period instead.
const maxEnded = 16

func (e *endedSessions[S]) add(s S) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.list) >= maxEnded {
		e.list = append(e.list[:0], e.list[1:]...)
	}
	e.list = append(e.list, s)
}

func (e *endedSessions[S]) has(s S) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.list {
		if x == s {
			return true
		}
	}
	return false
}

package caller_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/mcpledger/mcpledger/caller"
)

// session stands for an SDK's session: what a Link holds and replaces.
type session struct {
	n        int
	closeErr error
	closed   atomic.Int32
}

var errGone = errors.New("connection gone")

// sdk is a Link's view of a fake SDK: it counts connects, closes and tool
// list reads, and the clock is moved by hand.
type sdk struct {
	connects atomic.Int32
	lists    atomic.Int32
	closeErr error
	now      time.Time
	// mu guards now.
	mu sync.Mutex
}

func (f *sdk) link(connect bool) *caller.Link[*session] {
	l := &caller.Link[*session]{
		Close: func(s *session) error { s.closed.Add(1); return s.closeErr },
		Dead:  func(err error) bool { return errors.Is(err, errGone) },
		ListTools: func(_ context.Context, s *session) ([]*caller.Tool, error) {
			f.lists.Add(1)
			return []*caller.Tool{{Name: "pay"}, {Name: fmt.Sprintf("only-on-%d", s.n)}}, nil
		},
		Now: func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now },
	}
	if connect {
		l.Connect = func(context.Context) (*session, error) {
			return &session{n: int(f.connects.Add(1)), closeErr: f.closeErr}, nil
		}
	}
	return l
}

func (f *sdk) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func TestLinkToolCache(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// between runs between the first Tool("pay") and the second.
		between   func(f *sdk, l *caller.Link[*session])
		wantLists int32
	}{
		{"cached", func(*sdk, *caller.Link[*session]) {}, 1},
		{"cached just before the TTL", func(f *sdk, _ *caller.Link[*session]) { f.advance(caller.ToolsTTL - time.Nanosecond) }, 1},
		{"read again at the TTL", func(f *sdk, _ *caller.Link[*session]) { f.advance(caller.ToolsTTL) }, 2},
		{"the server said the list changed", func(_ *sdk, l *caller.Link[*session]) { l.ToolsChanged(l.Current()) }, 2},
		{"the list of any session changed", func(_ *sdk, l *caller.Link[*session]) { l.ToolsChanged(nil) }, 2},
		{"another session's list changed", func(_ *sdk, l *caller.Link[*session]) { l.ToolsChanged(&session{}) }, 1},
		{"a new session", func(_ *sdk, l *caller.Link[*session]) {
			if _, err := l.Reconnect(ctx, l.Current()); err != nil {
				t.Fatal(err)
			}
		}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &sdk{now: time.Unix(1_700_000_000, 0)}
			l := f.link(true)
			if _, err := l.Open(ctx); err != nil {
				t.Fatal(err)
			}
			if tool, err := l.Tool(ctx, "pay"); err != nil || tool == nil || tool.Name != "pay" {
				t.Fatalf("Tool(%q) = %v, %v; want pay", "pay", tool, err)
			}
			tc.between(f, l)
			if tool, err := l.Tool(ctx, "pay"); err != nil || tool == nil {
				t.Fatalf("Tool(%q) again = %v, %v; want pay", "pay", tool, err)
			}
			if got := f.lists.Load(); got != tc.wantLists {
				t.Errorf("tool lists read = %d; want %d", got, tc.wantLists)
			}
		})
	}
}

func TestLinkToolNotListed(t *testing.T) {
	ctx := context.Background()
	f := &sdk{}
	l := f.link(true)
	if _, err := l.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if tool, err := l.Tool(ctx, "absent"); err != nil || tool != nil {
		t.Fatalf("Tool(%q) = %v, %v; want nil, nil", "absent", tool, err)
	}
	if err := l.End(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tool(ctx, "pay"); err == nil {
		t.Fatalf("Tool(%q) without a session = nil error; want one", "pay")
	}
}

// Attempts that all saw one session die make one new session between
// them, and the dead one is closed once.
func TestLinkRepairReconnectsOnce(t *testing.T) {
	ctx := context.Background()
	f := &sdk{}
	l := f.link(true)
	dead, err := l.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { l.Repair(ctx, dead, fmt.Errorf("send: %w", errGone)) })
	}
	wg.Wait()
	if got := f.connects.Load(); got != 2 {
		t.Errorf("connects = %d; want 2 (the first session and one replacement)", got)
	}
	if got := dead.closed.Load(); got != 1 {
		t.Errorf("closes of the dead session = %d; want 1", got)
	}
	if cur := l.Current(); cur == dead || cur == nil {
		t.Errorf("Current() = %v; want the replacement", cur)
	}
}

func TestLinkRepairLeavesALiveSession(t *testing.T) {
	ctx := context.Background()
	other := errors.New("the tool said no")
	tests := []struct {
		name    string
		connect bool
		via     func(s *session) any
		err     error
	}{
		{"error that is not a dead session", true, func(s *session) any { return s }, other},
		{"no connect function", false, func(s *session) any { return s }, errGone},
		{"sent on nothing", true, func(*session) any { return nil }, errGone},
		{"sent on another SDK's session", true, func(*session) any { return "session" }, errGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &sdk{}
			l := f.link(tc.connect)
			s := &session{}
			l.Use(s)
			l.Repair(ctx, tc.via(s), tc.err)
			if l.Current() != s || s.closed.Load() != 0 {
				t.Errorf("Repair replaced or closed a session it should have kept (closes %d)", s.closed.Load())
			}
		})
	}
}

func TestLinkOpenWithoutConnect(t *testing.T) {
	l := (&sdk{}).link(false)
	if _, err := l.Open(context.Background()); !errors.Is(err, caller.ErrNoConnect) {
		t.Fatalf("Open() = %v; want ErrNoConnect", err)
	}
}

func TestLinkRepeatable(t *testing.T) {
	ctx := context.Background()
	f := &sdk{}
	l := f.link(true)
	var runs []int
	err := l.Repeatable(ctx, func(_ context.Context, s *session) error {
		runs = append(runs, s.n)
		if s.n == 1 {
			return errGone
		}
		return nil
	})
	if err != nil || len(runs) != 2 || runs[0] != 1 || runs[1] != 2 {
		t.Fatalf("Repeatable ran on sessions %v, err %v; want [1 2], nil", runs, err)
	}
	if l.Current().n != 2 {
		t.Errorf("Current() is session %d; want 2, for later calls", l.Current().n)
	}
}

// A child process's session counts as exited once it was closed with the
// process gone: a nil close error or the process's exit status.
func TestLinkExited(t *testing.T) {
	ctx := context.Background()
	exitErr := exec.Command("sh", "-c", "exit 3").Run()
	if _, ok := errs.AsType[*exec.ExitError](exitErr); !ok {
		t.Fatalf("sh -c 'exit 3' = %v; want an *exec.ExitError", exitErr)
	}
	tests := []struct {
		name     string
		child    bool
		closeErr error
		want     bool
	}{
		{"closed cleanly", true, nil, true},
		{"exit status", true, exitErr, true},
		{"did not exit", true, errors.New("wait: still running after SIGKILL"), false},
		{"not a child process", false, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &sdk{closeErr: tc.closeErr}
			l := f.link(true)
			l.ChildProcess = tc.child
			dead, err := l.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if l.Exited(dead) {
				t.Fatal("Exited before the session was closed")
			}
			l.Repair(ctx, dead, errGone)
			if got := l.Exited(dead); got != tc.want {
				t.Errorf("Exited(dead session) = %v; want %v", got, tc.want)
			}
			if l.Exited(l.Current()) {
				t.Error("Exited(the new session) = true; want false")
			}
		})
	}
}

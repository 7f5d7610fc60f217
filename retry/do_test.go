package retry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/server"
)

// fakeClock is a retry.Clock that moves only when the fake timer fires.
type fakeClock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeTimer fires at once, advancing the clock by the requested wait, and
// records every wait so tests can check the schedule without sleeping.
type fakeTimer struct {
	clock *fakeClock
	c     chan time.Time
	waits []time.Duration
}

func newFakeTimer() *fakeTimer {
	return &fakeTimer{clock: &fakeClock{now: time.Unix(1_700_000_000, 0)}, c: make(chan time.Time, 1)}
}

func (t *fakeTimer) Start(d time.Duration) {
	t.waits = append(t.waits, d)
	t.clock.advance(d)
	t.c <- t.clock.Now()
}
func (t *fakeTimer) Stop()                 {}
func (t *fakeTimer) C() <-chan time.Time   { return t.c }
func (t *fakeTimer) policy() *retry.Policy { return &retry.Policy{Timer: t, Clock: t.clock} }

// stuckTimer never fires; started is signalled when Do begins a wait.
type stuckTimer struct {
	started chan time.Duration
	c       chan time.Time
}

func (t *stuckTimer) Start(d time.Duration) { t.started <- d }
func (t *stuckTimer) Stop()                 {}
func (t *stuckTimer) C() <-chan time.Time   { return t.c }

var errFlaky = errors.New("flaky")

// failing returns an op that fails n times with err, then succeeds, counting
// its calls.
func failing(n int, err error, calls *int) func(context.Context, int) error {
	return func(_ context.Context, attempt int) error {
		*calls++
		if attempt != *calls {
			return retry.Stop(fmt.Errorf("attempt = %d on call %d", attempt, *calls))
		}
		if *calls <= n {
			return err
		}
		return nil
	}
}

func constRand(v float64) func() float64 { return func() float64 { return v } }

func TestDoSchedule(t *testing.T) {
	tests := []struct {
		name      string
		policy    func(*retry.Policy)
		failures  int
		err       error
		wantCalls int
		wantWaits []time.Duration
		wantErr   error
	}{
		{
			name:      "success first time never waits",
			failures:  0,
			wantCalls: 1,
		},
		{
			name:      "full jitter over doubling caps",
			policy:    func(p *retry.Policy) { p.Rand = constRand(0.5) },
			failures:  3,
			err:       errFlaky,
			wantCalls: 4,
			wantWaits: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
		},
		{
			name:      "defaults give five attempts",
			policy:    func(p *retry.Policy) { p.Rand = constRand(1) },
			failures:  100,
			err:       errFlaky,
			wantCalls: 5,
			wantWaits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond},
			wantErr:   retry.ErrExhausted,
		},
		{
			name: "caps stop at MaxInterval",
			policy: func(p *retry.Policy) {
				p.Rand, p.MaxAttempts, p.MaxInterval = constRand(1), 5, 300*time.Millisecond
			},
			failures:  100,
			err:       errFlaky,
			wantCalls: 5,
			wantWaits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond},
			wantErr:   retry.ErrExhausted,
		},
		{
			name:      "MaxAttempts one means no retry",
			policy:    func(p *retry.Policy) { p.MaxAttempts = 1 },
			failures:  100,
			err:       errFlaky,
			wantCalls: 1,
			wantErr:   retry.ErrExhausted,
		},
		{
			name: "MaxElapsed ends before a wait that would pass it",
			policy: func(p *retry.Policy) {
				p.Rand, p.MaxAttempts, p.MaxElapsed = constRand(1), 10, time.Second
				p.InitialInterval = 400 * time.Millisecond
			},
			failures:  100,
			err:       errFlaky,
			wantCalls: 2, // waits 400ms, then 400ms+800ms would pass 1s
			wantWaits: []time.Duration{400 * time.Millisecond},
			wantErr:   retry.ErrExhausted,
		},
		{
			name:      "retryAfter from the server lengthens the wait",
			policy:    func(p *retry.Policy) { p.Rand = constRand(0) },
			failures:  2,
			err:       client.Neutral(server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "busy", 1500*time.Millisecond)),
			wantCalls: 3,
			wantWaits: []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond},
		},
		{
			name:      "jitter above retryAfter is kept",
			policy:    func(p *retry.Policy) { p.Rand, p.InitialInterval = constRand(1), time.Second },
			failures:  1,
			err:       client.Neutral(server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "busy", 10*time.Millisecond)),
			wantCalls: 2,
			wantWaits: []time.Duration{time.Second},
		},
		{
			name:      "retryAfter past MaxElapsed gives up",
			policy:    func(p *retry.Policy) { p.MaxElapsed = time.Second },
			failures:  1,
			err:       client.Neutral(server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "busy", 2*time.Second)),
			wantCalls: 1,
			wantErr:   retry.ErrExhausted,
		},
		{
			name:      "Stop returns the cause at once",
			failures:  100,
			err:       retry.Stop(errFlaky),
			wantCalls: 1,
			wantErr:   errFlaky,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timer := newFakeTimer()
			p := timer.policy()
			if tt.policy != nil {
				tt.policy(p)
			}
			calls := 0
			err := retry.Do(context.Background(), p, failing(tt.failures, tt.err, &calls))
			if calls != tt.wantCalls {
				t.Errorf("Do made %d attempts; want %d", calls, tt.wantCalls)
			}
			if !slices.Equal(timer.waits, tt.wantWaits) {
				t.Errorf("Do waited %v; want %v", timer.waits, tt.wantWaits)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("Do = %v; want nil", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Do = %v; want an error matching %v", err, tt.wantErr)
			}
			if errors.Is(err, retry.ErrExhausted) && !errors.Is(err, tt.err) {
				t.Errorf("Do = %v; want the last attempt's error %v inside", err, tt.err)
			}
		})
	}
}

func TestDoStopUnwraps(t *testing.T) {
	err := retry.Do(context.Background(), nil, func(context.Context, int) error {
		return retry.Stop(errFlaky)
	})
	var perm *backoff.PermanentError
	if errors.As(err, &perm) {
		t.Errorf("Do = %#v; want the cause without the Stop mark", err)
	}
	if err != errFlaky {
		t.Errorf("Do = %v; want %v", err, errFlaky)
	}
	if retry.Stop(nil) != nil {
		t.Errorf("Stop(nil) = %v; want nil", retry.Stop(nil))
	}
}

func TestDoOnRetry(t *testing.T) {
	timer := newFakeTimer()
	p := timer.policy()
	p.Rand = constRand(1)
	type call struct {
		err     error
		next    time.Duration
		attempt int
	}
	var got []call
	p.OnRetry = func(err error, next time.Duration, attempt int) { got = append(got, call{err, next, attempt}) }
	calls := 0
	if err := retry.Do(context.Background(), p, failing(2, errFlaky, &calls)); err != nil {
		t.Fatalf("Do = %v; want nil", err)
	}
	want := []call{{errFlaky, 100 * time.Millisecond, 1}, {errFlaky, 200 * time.Millisecond, 2}}
	if !slices.Equal(got, want) {
		t.Errorf("OnRetry calls = %v; want %v", got, want)
	}
}

func TestDoJitterStaysUnderCap(t *testing.T) {
	timer := newFakeTimer()
	p := timer.policy()
	p.MaxAttempts = 50
	p.MaxInterval = 100 * time.Millisecond
	calls := 0
	if err := retry.Do(context.Background(), p, failing(40, errFlaky, &calls)); err != nil {
		t.Fatalf("Do = %v; want nil", err)
	}
	distinct := map[time.Duration]bool{}
	for _, w := range timer.waits {
		if w < 0 || w > 100*time.Millisecond {
			t.Errorf("wait %v outside [0, 100ms]", w)
		}
		distinct[w] = true
	}
	if len(distinct) < 10 {
		t.Errorf("40 jittered waits had %d distinct values; want them spread", len(distinct))
	}
}

func TestDoCancelDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := &stuckTimer{started: make(chan time.Duration, 1), c: make(chan time.Time)}
	p := &retry.Policy{Timer: timer, InitialInterval: time.Hour, MaxInterval: time.Hour, MaxElapsed: -1, Rand: constRand(1)}
	done := make(chan error, 1)
	calls := 0
	go func() { done <- retry.Do(ctx, p, failing(100, errFlaky, &calls)) }()

	if d := <-timer.started; d != time.Hour {
		t.Fatalf("Do started a wait of %v; want 1h", d)
	}
	// The timer never fires: Do returning at all is the cancel's doing.
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) {
			t.Errorf("Do = %v; want context.Canceled joined with %v", err, errFlaky)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do did not return after the context was cancelled")
	}
	if calls != 1 {
		t.Errorf("Do made %d attempts; want 1", calls)
	}
}

func TestDoRealTimerCancel(t *testing.T) {
	// The real timer path: a one-hour wait that a cancel must cut short.
	ctx, cancel := context.WithCancel(context.Background())
	p := &retry.Policy{InitialInterval: time.Hour, MaxInterval: time.Hour, MaxElapsed: -1, Rand: constRand(1)}
	p.OnRetry = func(error, time.Duration, int) { cancel() }
	done := make(chan error, 1)
	go func() {
		done <- retry.Do(ctx, p, func(context.Context, int) error { return errFlaky })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do kept waiting on a real timer after cancel")
	}
}

func TestDoRealTimerRetries(t *testing.T) {
	p := &retry.Policy{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}
	calls := 0
	if err := retry.Do(context.Background(), p, failing(2, errFlaky, &calls)); err != nil || calls != 3 {
		t.Errorf("Do = %v after %d attempts; want nil after 3", err, calls)
	}
}

func TestDoContextDoneBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := retry.Do(ctx, nil, failing(0, nil, &calls))
	if !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("Do = %v after %d attempts; want context.Canceled and no attempt", err, calls)
	}
}

func TestDoContextDoneDuringAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := newFakeTimer()
	calls := 0
	err := retry.Do(ctx, timer.policy(), func(context.Context, int) error {
		calls++
		cancel()
		return errFlaky
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) || calls != 1 || len(timer.waits) != 0 {
		t.Errorf("Do = %v after %d attempts and waits %v; want canceled+flaky, 1 attempt, no wait", err, calls, timer.waits)
	}
}

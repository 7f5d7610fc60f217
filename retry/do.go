package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// ErrExhausted is wrapped, together with the last attempt's error, by the
// error Do returns when the policy allows no further attempt.
var ErrExhausted = errors.New("retry: gave up")

// Stop marks err as permanent for Do: Do returns it at once instead of
// retrying. errors.Is and errors.As still see err, and Classify of the
// marked error is Permanent. Stop(nil) is nil.
//
// The mark is backoff's *PermanentError, so operations shared with
// cenkalti/backoff behave the same under both.
func Stop(err error) error {
	return backoff.Permanent(err)
}

// Do calls op(ctx, attempt), attempt counting from 1, until op returns nil,
// returns an error marked with Stop, or the policy is exhausted. A nil
// *Policy means the defaults.
//
// The wait before each retry is full jitter over the exponential cap
// (Rand() × min(MaxInterval, InitialInterval × Multiplier^(n-1))), but at
// least RetryAfter(err) when the server named one. Do gives up rather than
// start a wait that would end past MaxElapsed.
//
// Do returns nil on success; the unmarked error for a Stop; an error wrapping
// ErrExhausted and the last error when out of attempts or time; and, once ctx
// is done (before an attempt or during a wait, which it ends at once),
// ctx.Err() joined with the last error. If ctx is done before the first
// attempt, op is not called.
func Do(ctx context.Context, p *Policy, op func(ctx context.Context, attempt int) error) error {
	pol := p.withDefaults()
	start := pol.Clock.Now()
	// The caps and the timer are made at the first retry: most calls
	// succeed at once and never need them.
	var (
		caps  *backoff.ExponentialBackOff
		timer = pol.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()

	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return joinCtx(err, last)
		}
		last = op(ctx, attempt)
		if last == nil {
			return nil
		}
		var stop *backoff.PermanentError
		if errors.As(last, &stop) {
			return stop.Err
		}
		if err := ctx.Err(); err != nil {
			return joinCtx(err, last)
		}
		if attempt >= pol.MaxAttempts {
			return fmt.Errorf("%w after %d attempts: %w", ErrExhausted, attempt, last)
		}

		if caps == nil {
			caps = pol.caps()
		}
		next := pol.jitter(caps.NextBackOff())
		if after, ok := RetryAfter(last); ok && after > next {
			next = after
		}
		if elapsed := pol.Clock.Now().Sub(start); pol.MaxElapsed > 0 && elapsed+next > pol.MaxElapsed {
			return fmt.Errorf("%w after %d attempts in %v: %w", ErrExhausted, attempt, elapsed, last)
		}
		if pol.OnRetry != nil {
			pol.OnRetry(last, next, attempt)
		}

		if timer == nil {
			timer = &realTimer{}
		}
		timer.Start(next)
		select {
		case <-ctx.Done():
			return joinCtx(ctx.Err(), last)
		case <-timer.C():
		}
	}
}

func joinCtx(ctxErr, last error) error {
	if last == nil {
		return ctxErr
	}
	return errors.Join(ctxErr, last)
}

// realTimer is the Timer Do uses when the Policy sets none.
type realTimer struct {
	t *time.Timer
}

func (t *realTimer) Start(d time.Duration) {
	if t.t == nil {
		t.t = time.NewTimer(d)
		return
	}
	t.t.Reset(d)
}

func (t *realTimer) Stop() {
	if t.t != nil {
		t.t.Stop()
	}
}

func (t *realTimer) C() <-chan time.Time {
	return t.t.C
}

package retry

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Defaults for the zero fields of a Policy.
const (
	DefaultMaxAttempts     = 5
	DefaultInitialInterval = 100 * time.Millisecond
	DefaultMaxInterval     = 5 * time.Second
	DefaultMaxElapsed      = 30 * time.Second
	DefaultMultiplier      = 2.0
)

// Policy paces the attempts of Do. The zero value, like a nil *Policy, means
// the defaults above; each zero field takes its default on its own.
type Policy struct {
	// MaxAttempts bounds the attempts, the first one included.
	MaxAttempts int
	// InitialInterval is the cap of the first wait; each later cap is
	// Multiplier times the previous one, up to MaxInterval.
	InitialInterval time.Duration
	MaxInterval     time.Duration
	// MaxElapsed bounds the time from the first attempt to the start of the
	// last one: Do gives up instead of waiting past it. Negative: no bound.
	MaxElapsed time.Duration
	Multiplier float64

	// Timer waits between attempts. Nil: a new real timer per Do. Tests
	// inject a fake that fires at once so they never sleep; a Timer serves
	// one Do at a time.
	Timer Timer
	// Clock measures MaxElapsed. Nil: the wall clock.
	Clock Clock
	// Rand returns a number in [0, 1) that scales each wait (full jitter:
	// wait = Rand() * the exponential cap). Nil: math/rand/v2.
	Rand func() float64
	// OnRetry, when set, is called before each wait with the error of the
	// attempt that failed, the wait, and that attempt's number (from 1).
	OnRetry func(err error, next time.Duration, attempt int)
}

// withDefaults returns a copy of p with every zero field set.
func (p *Policy) withDefaults() Policy {
	var q Policy
	if p != nil {
		q = *p
	}
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = DefaultMaxAttempts
	}
	if q.InitialInterval <= 0 {
		q.InitialInterval = DefaultInitialInterval
	}
	if q.MaxInterval <= 0 {
		q.MaxInterval = DefaultMaxInterval
	}
	if q.MaxInterval < q.InitialInterval {
		q.MaxInterval = q.InitialInterval
	}
	if q.MaxElapsed == 0 {
		q.MaxElapsed = DefaultMaxElapsed
	}
	if q.Multiplier < 1 {
		q.Multiplier = DefaultMultiplier
	}
	if q.Clock == nil {
		q.Clock = wallClock{}
	}
	if q.Rand == nil {
		q.Rand = rand.Float64
	}
	return q
}

// caps yields the exponential caps (InitialInterval, ×Multiplier, ... up to
// MaxInterval). backoff.ExponentialBackOff computes them with its
// randomization turned off: the jitter is ours (full jitter), not its
// ±RandomizationFactor spread.
func (p *Policy) caps() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(p.InitialInterval),
		backoff.WithMaxInterval(p.MaxInterval),
		backoff.WithMultiplier(p.Multiplier),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0), // Do enforces MaxElapsed itself.
		backoff.WithClockProvider(p.Clock),
	)
}

// jitter scales ceiling by Rand(), kept inside [0, cap] even for a Rand that
// strays outside [0, 1).
func (p *Policy) jitter(ceiling time.Duration) time.Duration {
	r := p.Rand()
	if r < 0 {
		r = 0
	}
	if r > 1 {
		r = 1
	}
	return time.Duration(r * float64(ceiling))
}

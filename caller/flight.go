package caller

import (
	"context"
	"errors"
	"sync"
)

// flightGroup runs one execution per key in this process: the first caller
// of a key runs it on its own goroutine, and callers that arrive while it
// runs wait for its outcome. A waiter stops waiting when its context ends;
// the execution goes on for the caller that started it.
//
// golang.org/x/sync/singleflight waits with a context only through DoChan,
// which starts a goroutine for every call, the first one included: a
// hand-off on the path of every new operation that this group avoids.
type flightGroup[R comparable] struct {
	mu sync.Mutex
	m  map[string]*flight[R]
}

type flight[R comparable] struct {
	done chan struct{} // closed when out and err are final
	out  *Outcome[R]
	err  error
	// waiters counts the callers sharing this flight; guarded by
	// flightGroup.mu, final once the flight has left the map.
	waiters int
}

// errFlightPanicked is what waiters get when the execution they wait for
// panicked; the panic itself goes on up the caller that started it.
var errFlightPanicked = errors.New("caller: the shared execution of this key panicked")

// do runs fn once for key, or waits for the run already under way. Every
// caller gets its own *Outcome to mutate: when a run had waiters, each of
// them and the caller that ran it get copies, made by share (waiter: the
// copy is for a caller that did not run fn). gaveUp reports a waiter whose
// ctx ended first; err is then ctx's error.
func (g *flightGroup[R]) do(ctx context.Context, key string, share func(o *Outcome[R], waiter bool) (*Outcome[R], error), fn func() (*Outcome[R], error)) (o *Outcome[R], err error, gaveUp bool) {
	g.mu.Lock()
	if f, ok := g.m[key]; ok {
		f.waiters++
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err(), true
		case <-f.done:
			if f.err != nil {
				return nil, f.err, false
			}
			o, err := share(f.out, true)
			return o, err, false
		}
	}
	f := &flight[R]{done: make(chan struct{}), err: errFlightPanicked}
	if g.m == nil {
		g.m = map[string]*flight[R]{}
	}
	g.m[key] = f
	g.mu.Unlock()

	waiters := 0
	func() {
		// Deferred so that a panicking fn still releases its waiters.
		defer func() {
			g.mu.Lock()
			delete(g.m, key)
			waiters = f.waiters // no one can join once the flight is gone
			g.mu.Unlock()
			close(f.done)
		}()
		f.out, f.err = fn()
	}()
	if f.err != nil || waiters == 0 {
		return f.out, f.err, false
	}
	// Waiters copy f.out concurrently; it stays unmodified, and this
	// caller gets a copy like them.
	o, err = share(f.out, false)
	return o, err, false
}

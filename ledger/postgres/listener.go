package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// listener holds one connection outside the pool that both LISTENs on the
// schema's channel, forwarding notifications to the waiters, and sends this
// Store's notifications. It starts with the first Wait or the first write
// that others may wait for, and reconnects with a bounded backoff until
// stopped.
//
// Notifications are sent after the write committed, in a transaction of
// their own, rather than by the writing transaction: PostgreSQL holds a
// database-wide lock from a notifying transaction's commit until its end,
// which would serialize every completion's WAL flush and defeat group
// commit. A notification lost this way (a crash right after the commit)
// costs a follower one poll interval, never correctness.
type listener struct {
	cfg     *pgx.ConnConfig
	channel string
	ws      *waiters
	kick    chan struct{} // buffered 1: publish wakes run

	mu      sync.Mutex // guards started, cancel, live, gen, changed, pid, pending
	started bool
	cancel  context.CancelFunc
	live    bool
	gen     int                 // how many times the LISTEN was established
	changed chan struct{}       // closed and replaced whenever live changes
	pid     uint32              // server process of the live connection
	pending map[string]struct{} // payloads to send
	done    chan struct{}
}

// maxPending bounds the payloads queued while the server is unreachable;
// past it followers elsewhere find out by polling.
const maxPending = 4096

func newListener(cfg *pgx.ConnConfig, channel string, ws *waiters) *listener {
	return &listener{cfg: cfg, channel: channel, ws: ws, kick: make(chan struct{}, 1),
		changed: make(chan struct{}), pending: make(map[string]struct{}), done: make(chan struct{})}
}

func (l *listener) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.startLocked()
}

func (l *listener) startLocked() {
	if l.started {
		return
	}
	l.started = true
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.run(ctx)
}

// publish queues a notification for the followers of a record in other
// processes.
func (l *listener) publish(payload string) {
	l.mu.Lock()
	if len(l.pending) < maxPending {
		l.pending[payload] = struct{}{}
	}
	l.startLocked()
	l.mu.Unlock()
	signal(l.kick)
}

func (l *listener) takePending() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return nil
	}
	out := make([]string, 0, len(l.pending))
	for p := range l.pending {
		out = append(out, p)
	}
	clear(l.pending)
	return out
}

// stop ends the listener and waits for its goroutine.
func (l *listener) stop() {
	l.mu.Lock()
	wasStarted := l.started
	l.started = true // a Wait racing Close must not start a new one
	cancel := l.cancel
	l.mu.Unlock()
	if !wasStarted {
		return
	}
	cancel()
	<-l.done
}

func (l *listener) healthy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live
}

// state reports whether the LISTEN is established, how many times it has
// been, the server process holding it, and a channel closed at the next
// change.
func (l *listener) state() (live bool, gen int, pid uint32, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live, l.gen, l.pid, l.changed
}

func (l *listener) setLive(v bool, pid uint32) {
	l.mu.Lock()
	l.live, l.pid = v, pid
	if v {
		l.gen++
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	// Whether it just came up or went down, notifications may have been
	// missed: every waiter re-reads (and, while down, polls faster).
	l.ws.wakeAll()
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	delay := 50 * time.Millisecond
	for ctx.Err() == nil {
		if l.listenOnce(ctx) {
			delay = 50 * time.Millisecond
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// listenOnce connects, listens, sends and forwards until the connection
// fails. It reports whether the LISTEN was established.
func (l *listener) listenOnce(ctx context.Context) bool {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return false
	}
	// The connection failed or ctx ended: how its close went changes
	// nothing, the caller connects again or stops.
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		return false
	}
	l.setLive(true, conn.PgConn().PID())
	defer l.setLive(false, 0)
	for {
		if payloads := l.takePending(); len(payloads) > 0 {
			if _, err := conn.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, l.channel, payloads); err != nil {
				return true
			}
		}
		// A publish cancels the wait (a deadline on the socket, which
		// leaves the connection usable) so that the loop sends at once.
		wctx, cancel := context.WithCancel(ctx)
		stopKick := make(chan struct{})
		go func() {
			select {
			case <-l.kick:
				cancel()
			case <-stopKick:
			}
		}()
		n, err := conn.WaitForNotification(wctx)
		close(stopKick)
		cancel()
		switch {
		case err == nil:
			l.ws.wake(n.Payload)
		case ctx.Err() != nil || conn.IsClosed():
			return true
		}
	}
}

package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// Wait blocks until the record leaves PROCESSING and PENDING_APPROVAL and
// returns it. Writers in this process wake it directly; writers in other
// processes wake it through LISTEN/NOTIFY; a bounded poll covers a lost
// notification or a listener that is reconnecting. When ctx ends first Wait
// returns the latest record it saw and ctx's error.
func (s *Store) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	s.lis.start()
	w := s.waiters.add(notifyPayload(id))
	defer s.waiters.remove(w)

	poll := s.pollMin
	var (
		last    *ledger.Record
		watched bool
	)
	for {
		// Registered before reading: a change committed after this read
		// finds the waiter and its signal is kept in the buffered channel.
		rec, err := s.Get(ctx, id)
		if err != nil {
			if ctx.Err() != nil && last != nil {
				return last, ctx.Err()
			}
			return last, err
		}
		last = rec
		if testHookWaitRead != nil {
			testHookWaitRead(rec)
		}
		if !rec.State.Waiting() {
			return rec, nil
		}
		if !watched {
			ok, err := s.watch(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					return last, ctx.Err()
				}
				return last, err
			}
			if !ok {
				continue // settled meanwhile: read it
			}
			watched = true
		}
		wait := poll
		if s.lis.healthy() {
			// Notifications flow: the poll only guards against one lost.
			wait = s.pollMax
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return last, ctx.Err()
		case <-w.ch:
			t.Stop()
		case <-t.C:
			poll = min(2*poll, s.pollMax)
		}
	}
}

// testHookWaitRead, when set by a test, sees every record Wait reads.
var testHookWaitRead func(*ledger.Record)

// settled wakes the followers of id: those of this Store at once, those of
// other processes, when any said they wait (watched), through a
// notification.
func (s *Store) settled(id ledger.ID, watched bool) {
	p := notifyPayload(id)
	s.waiters.wake(p)
	if watched {
		s.lis.publish(p)
	}
}

// watch marks a waiting record as watched, so that whoever settles it
// notifies. It reports false when the record no longer waits. The mark and
// the settling write lock the same row, so either the writer sees the mark
// or this update sees the record settled: no notification is lost between
// them. The mark is a hint (the poll still runs), so its commit does not
// wait for the disk.
func (s *Store) watch(ctx context.Context, id ledger.ID) (bool, error) {
	var n int64
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			tag, err := c.Exec(ctx, `UPDATE records SET watched = true
				FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
				WHERE tenant = $1 AND tool = $2 AND key = $3 AND state IN ('PROCESSING', 'PENDING_APPROVAL')`,
				id.Tenant, id.Tool, id.Key)
			n = tag.RowsAffected()
			return err
		})
	})
	if err != nil {
		return false, fmt.Errorf("postgres: wait: %w", err)
	}
	return n == 1, nil
}

// waiter is one Wait call's registration.
type waiter struct {
	key string
	ch  chan struct{} // buffered 1: a wake-up is never lost, never blocks
}

// waiters routes wake-ups, by notification payload, to the Wait calls of
// this Store.
type waiters struct {
	mu sync.Mutex // guards byKey
	// byKey maps a notification payload to the waiters of that record.
	byKey map[string]map[*waiter]struct{}
}

func newWaiters() *waiters {
	return &waiters{byKey: make(map[string]map[*waiter]struct{})}
}

func (ws *waiters) add(key string) *waiter {
	w := &waiter{key: key, ch: make(chan struct{}, 1)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := ws.byKey[key]
	if set == nil {
		set = make(map[*waiter]struct{})
		ws.byKey[key] = set
	}
	set[w] = struct{}{}
	return w
}

func (ws *waiters) remove(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := ws.byKey[w.key]
	delete(set, w)
	if len(set) == 0 {
		delete(ws.byKey, w.key)
	}
}

func (ws *waiters) wake(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.byKey[key] {
		signal(w.ch)
	}
}

// wakeAll makes every waiter re-read its record: used when notifications
// may have been missed (the listener reconnected).
func (ws *waiters) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, set := range ws.byKey {
		for w := range set {
			signal(w.ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

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
	defer conn.Close(context.Background())
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

package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// Defaults for the zero fields of Dispatcher.
const (
	DefaultLease      = 30 * time.Second
	DefaultBatch      = 16
	DefaultPoll       = 500 * time.Millisecond
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = time.Minute
)

// Dispatcher delivers outbox events at least once. Several dispatchers (in
// one process or many) may share a database: each event is leased to one of
// them at a time, and a dispatcher that dies mid-delivery loses its lease,
// after which another delivers the event again. Consumers dedupe with an
// Inbox.
//
// Set DB and Deliver; every other field has a default.
type Dispatcher struct {
	DB      *sql.DB
	Dialect *Dialect // SQLite when nil
	// Deliver hands one event to the downstream. A nil error marks it
	// delivered; an error schedules a retry after a backoff. Its context
	// ends when the event's lease ends, so a delivery never outlives the
	// lease that keeps other dispatchers away.
	Deliver func(ctx context.Context, e Event) error
	// Owner names this dispatcher in leases (host:pid:random when empty).
	Owner string
	// Lease is how long a claimed event is reserved for one delivery
	// (DefaultLease when zero). It must exceed the slowest delivery.
	Lease time.Duration
	// Batch is how many events one claim takes (DefaultBatch when zero).
	Batch int
	// Poll is how often Run looks for due events when idle and not
	// notified (DefaultPoll when zero).
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the full-jitter exponential wait
	// before a failed event is tried again.
	MinBackoff, MaxBackoff time.Duration
	// MaxAttempts, when positive, parks an event as dead after that many
	// failed deliveries; it stays in the table for a person to look at.
	MaxAttempts int
	Logger      *slog.Logger // slog.Default when nil

	// once guards the lazy creation of wake, so the zero Dispatcher works.
	once sync.Once
	wake chan struct{}
	// ownerOnce fixes the default owner at first use.
	ownerOnce sync.Once
	owner     string
}

// Notify wakes Run now instead of at its next poll; handlers call it after
// committing a transaction that enqueued events. It never blocks.
func (d *Dispatcher) Notify() {
	select {
	case d.wakeCh() <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) wakeCh() chan struct{} {
	d.once.Do(func() { d.wake = make(chan struct{}, 1) })
	return d.wake
}

// Run delivers due events until ctx ends, then returns ctx's error.
// Database errors are logged and retried at the poll interval.
func (d *Dispatcher) Run(ctx context.Context) error {
	if err := d.check(); err != nil {
		return err
	}
	wake := d.wakeCh()
	poll := orDur(d.Poll, DefaultPoll)
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		n, err := d.DeliverDue(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			d.logger().ErrorContext(ctx, "outbox: delivering", "err", err)
		}
		if err == nil && n >= d.batch() {
			// A full batch: more may be due right away.
			continue
		}
		timer.Reset(poll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-timer.C:
		}
	}
}

// DeliverDue claims one batch of due events and delivers them in order. It
// returns how many it claimed, delivered or not.
func (d *Dispatcher) DeliverDue(ctx context.Context) (int, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	events, leases, err := d.claim(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for i, e := range events {
		if err := d.deliverOne(ctx, e, leases[i]); err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return len(events), errors.Join(errs...)
}

func (d *Dispatcher) claim(ctx context.Context) ([]Event, []time.Time, error) {
	now := time.Now()
	lease := orDur(d.Lease, DefaultLease)
	rows, err := d.DB.QueryContext(ctx, dialectOr(d.Dialect).Claim,
		d.ownerName(), now.Add(lease).UnixNano(), now.UnixNano(), d.batch())
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: %w", err)
	}
	// On the error paths; the end below checks its own Close: the claim
	// is a writing statement (UPDATE ... RETURNING).
	defer func() { _ = rows.Close() }()
	var events []Event
	var leases []time.Time
	for rows.Next() {
		var e Event
		var created, until int64
		if err := rows.Scan(&e.ID, &e.Topic, &e.Payload, &e.Attempts, &created, &until); err != nil {
			return nil, nil, fmt.Errorf("outbox: claim: %w", err)
		}
		e.CreatedAt = time.Unix(0, created)
		events = append(events, e)
		leases = append(leases, time.Unix(0, until))
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: %w", err)
	}
	if err := rows.Close(); err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: %w", err)
	}
	return events, leases, nil
}

// leaseMargin is kept between the end of a delivery and the end of its
// lease, so the delivered mark is written before anyone else may claim.
const leaseMargin = 50 * time.Millisecond

func (d *Dispatcher) deliverOne(ctx context.Context, e Event, leaseUntil time.Time) error {
	end := leaseUntil.Add(-leaseMargin)
	if !time.Now().Before(end) {
		// Earlier events of the batch used up this one's lease: leave it
		// for the next claim rather than start a delivery that cannot end
		// in time.
		return nil
	}
	dctx, cancel := context.WithDeadline(ctx, end)
	derr := d.Deliver(dctx, e)
	cancel()
	// The marks below run even when ctx ended, so a finished delivery is
	// not repeated only because the dispatcher is shutting down.
	mctx, mcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer mcancel()
	if derr == nil {
		_, err := d.DB.ExecContext(mctx,
			`UPDATE mcpledger_outbox SET delivered_at = $1, lease_owner = NULL, lease_until = NULL, last_error = NULL
			 WHERE id = $2 AND delivered_at IS NULL`,
			time.Now().UnixNano(), e.ID)
		if err != nil {
			return fmt.Errorf("outbox: mark %s delivered: %w", e.ID, err)
		}
		return nil
	}
	now := time.Now()
	var dead any
	if d.MaxAttempts > 0 && e.Attempts >= d.MaxAttempts {
		dead = now.UnixNano()
		d.logger().ErrorContext(ctx, "outbox: event is dead after its last attempt", "id", e.ID, "topic", e.Topic, "attempts", e.Attempts, "err", derr)
	}
	next := now.Add(d.backoff(e.Attempts))
	_, err := d.DB.ExecContext(mctx,
		`UPDATE mcpledger_outbox SET lease_owner = NULL, lease_until = NULL, available_at = $1, last_error = $2, dead_at = $3
		 WHERE id = $4 AND lease_owner = $5 AND delivered_at IS NULL`,
		next.UnixNano(), truncate(derr.Error(), 1000), dead, e.ID, d.ownerName())
	if err != nil {
		return errors.Join(fmt.Errorf("outbox: deliver %s: %w", e.ID, derr), fmt.Errorf("outbox: reschedule %s: %w", e.ID, err))
	}
	return fmt.Errorf("outbox: deliver %s (attempt %d): %w", e.ID, e.Attempts, derr)
}

// backoff is full jitter: a uniform wait in [0, min(max, min*2^(n-1))].
func (d *Dispatcher) backoff(attempt int) time.Duration {
	lo, hi := orDur(d.MinBackoff, DefaultMinBackoff), orDur(d.MaxBackoff, DefaultMaxBackoff)
	ceil := lo
	for i := 1; i < attempt && ceil < hi; i++ {
		ceil *= 2
	}
	ceil = min(ceil, hi)
	return rand.N(ceil + 1)
}

// Purge deletes delivered events older than before and returns how many.
func (d *Dispatcher) Purge(ctx context.Context, before time.Time) (int64, error) {
	res, err := d.DB.ExecContext(ctx,
		`DELETE FROM mcpledger_outbox WHERE delivered_at IS NOT NULL AND delivered_at < $1`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("outbox: purge: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("outbox: purge: %w", err)
	}
	return n, nil
}

func (d *Dispatcher) check() error {
	if d.DB == nil || d.Deliver == nil {
		return errors.New("outbox: dispatcher needs DB and Deliver")
	}
	return nil
}

func (d *Dispatcher) batch() int {
	if d.Batch <= 0 {
		return DefaultBatch
	}
	return d.Batch
}

func (d *Dispatcher) ownerName() string {
	d.ownerOnce.Do(func() {
		d.owner = d.Owner
		if d.owner == "" {
			host, err := os.Hostname()
			if err != nil {
				host = "unknown-host"
			}
			d.owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), newID()[4:12])
		}
	})
	return d.owner
}

func (d *Dispatcher) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.Default()
	}
	return d.Logger
}

func orDur(v, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

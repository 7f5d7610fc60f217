package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/mcpledger/mcpledger/ledger"
)

// writeTimeout bounds one background write, so a hung store delays the
// next batch instead of stopping the writer.
const writeTimeout = 10 * time.Second

// pruneEvery is how often old events are deleted.
const pruneEvery = time.Hour

// eventWriter queues call events and writes them to the event log in
// batches from one goroutine, so the call that produced an event (a replay
// answered in microseconds) never waits on a database write.
type eventWriter struct {
	log        ledger.EventLog
	logger     *slog.Logger
	now        func() time.Time
	dropped    metric.Int64Counter
	flushEvery time.Duration
	batchSize  int
	maxPending int
	retention  time.Duration

	// mu guards pending and closed.
	mu      sync.Mutex
	pending []ledger.Event
	closed  bool

	// writeMu is held while a batch is taken and written, so a Flush that
	// gets it knows every event queued before it has been written.
	writeMu   sync.Mutex
	lastPrune time.Time // guarded by writeMu

	kick      chan struct{} // a full batch is waiting
	quit      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
}

func newEventWriter(o Options, dropped metric.Int64Counter) *eventWriter {
	w := &eventWriter{
		log:        o.Events,
		logger:     o.Logger,
		now:        o.Now,
		dropped:    dropped,
		flushEvery: o.FlushEvery,
		batchSize:  o.BatchSize,
		maxPending: o.MaxPending,
		retention:  o.EventRetention,
		kick:       make(chan struct{}, 1),
		quit:       make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	if w.flushEvery <= 0 {
		w.flushEvery = DefaultFlushEvery
	}
	if w.batchSize <= 0 {
		w.batchSize = DefaultBatchSize
	}
	if w.maxPending <= 0 {
		w.maxPending = DefaultMaxPending
	}
	if w.retention == 0 {
		w.retention = DefaultEventRetention
	}
	go w.run()
	return w
}

// add queues e without blocking. An event the store would refuse is
// dropped here, because one bad event fails its whole batch.
func (w *eventWriter) add(e ledger.Event) {
	if ledger.ValidateTenant(e.Tenant) != nil {
		w.dropped.Add(context.Background(), 1)
		return
	}
	w.mu.Lock()
	if w.closed || len(w.pending) >= w.maxPending {
		w.mu.Unlock()
		w.dropped.Add(context.Background(), 1)
		return
	}
	w.pending = append(w.pending, e)
	full := len(w.pending) >= w.batchSize
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default: // a kick is already waiting
		}
	}
}

func (w *eventWriter) run() {
	defer close(w.stopped)
	t := time.NewTicker(w.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
		case <-w.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		if err := w.flush(ctx); err != nil {
			w.logger.Warn("mcpledger telemetry: writing call events failed; they are dropped", "err", err)
		}
		cancel()
	}
}

// flush writes every queued event. Events of a failed write are dropped
// and counted: statistics must not pile up in memory while a store is down.
func (w *eventWriter) flush(ctx context.Context) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	var errs []error
	for {
		w.mu.Lock()
		n := min(len(w.pending), w.batchSize)
		batch := make([]ledger.Event, n)
		copy(batch, w.pending)
		w.pending = append(w.pending[:0], w.pending[n:]...)
		w.mu.Unlock()
		if n == 0 {
			break
		}
		if err := w.log.AppendEvents(ctx, batch); err != nil {
			w.dropped.Add(ctx, int64(n))
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	w.prune(ctx)
	return errors.Join(errs...)
}

// prune deletes events past retention, at most once per pruneEvery.
// writeMu is held.
func (w *eventWriter) prune(ctx context.Context) {
	now := w.now()
	if w.retention < 0 || (!w.lastPrune.IsZero() && now.Sub(w.lastPrune) < pruneEvery) {
		return
	}
	w.lastPrune = now
	if _, err := w.log.PurgeEvents(ctx, now.Add(-w.retention)); err != nil {
		w.logger.Warn("mcpledger telemetry: deleting old call events failed", "err", err)
	}
}

// close stops the background writer, then writes what is left. Later
// events are dropped.
func (w *eventWriter) close(ctx context.Context) error {
	var err error
	w.closeOnce.Do(func() {
		close(w.quit)
		<-w.stopped
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		err = w.flush(ctx)
	})
	return err
}

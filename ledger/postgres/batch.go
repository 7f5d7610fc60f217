package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// Group commit by the client. Under concurrency most of an operation's cost
// is not its statement but the round trip, the transaction around it and
// the server process that runs it: on a small machine many connections,
// each flushing its own commit, spend the CPU on switching between server
// processes and waiting for the WAL write lock. A batcher gathers the
// writes that arrive while its last batch is in flight and sends them as
// one pipeline in one transaction: one round trip, one commit, one WAL
// flush for all of them.
//
// Each write keeps its own outcome. Every statement in a batch is one that
// cannot fail for another record's sake: the claim insert does nothing on a
// conflict, a transition's compare-and-set matches no row when its state,
// owner or fence is stale. A statement that fails anyway (bytes the server
// refuses) aborts the shared transaction, so nothing of the batch is
// committed, and every member then runs its write on its own, as it would
// without batching, and gets exactly its own error. The members are sent in
// key order, so two batches (of this process or another) lock their rows
// in the same order and cannot deadlock each other.
//
// A lone caller never waits for a window: with nothing in flight it runs
// its own statement at once, on its own context, exactly the unbatched path.

// maxBatch bounds one batch: its transaction's size and the row locks it
// holds until its commit.
const maxBatch = 128

// maxFlights is how many writes or batches of one kind are in flight at
// once; what arrives meanwhile gathers into the next batch. With one, the
// server would sit idle while that batch's commit waits for its WAL flush;
// two overlap one batch's statements with the other's flush. More only
// split the same callers into smaller batches and more commits.
const maxFlights = 2

// batchTimeout bounds a batch in flight, which runs on no caller's context:
// past it the members learn that their writes' fate is unknown and read
// their rows back, as after a lost connection.
const batchTimeout = 30 * time.Second

// errAlone tells a member to run its write on its own: its batch failed
// before anything committed.
var errAlone = errors.New("postgres: run the write on its own")

// write is one statement a batcher sends for a caller.
type write struct {
	id    ledger.ID
	query string
	args  []any
	row   any // what the batcher's merge reads, if it has one
	// scan reads the statement's result inside a batch; pgx.ErrNoRows is
	// an outcome (nothing matched), not a failure.
	scan func(pgx.Row) error
	// alone runs the same write by itself on the caller's context: the path
	// of a lone caller and of the members of a failed batch.
	alone func() error

	done chan struct{} // closed when err is set
	err  error
	// Guarded by the batcher's mu: taken into a batch, or given up by its
	// caller before that.
	taken, gone bool
}

// batcher gathers writes of one kind into batches, at most flights of them
// in flight at a time. The zero value is not usable: see newBatcher.
type batcher struct {
	s *Store
	// async commits with synchronous_commit off (ledger.WriteBehind).
	async bool
	// Tests only: queued runs after a write joined the queue, beforeSend
	// with each batch of two or more before it is sent.
	queued     func()
	beforeSend func(ws []*write)

	// flights bounds the writes and batches in flight at once.
	flights int
	// merge, when set, makes a batch one statement instead of a pipeline:
	// given the batch's writes it returns a statement (its own transaction)
	// whose rows are the IDs of the writes that took effect. It is given
	// at most one write per ID. Each write's outcome is then nil, or
	// pgx.ErrNoRows when its ID is not among the rows; scan is not used.
	merge func(ws []*write) (query string, args []any)

	mu       sync.Mutex // guards queue and inflight, and each queued write's taken and gone
	queue    []*write
	inflight int
}

func newBatcher(s *Store, async bool) *batcher {
	return &batcher{s: s, async: async, flights: maxFlights}
}

// do runs w and returns its error: at once when fewer than b.flights writes
// or batches are in flight, else in the next batch.
// A caller whose ctx ends while w waits in the queue takes it back; once w
// is in a batch its caller still returns at once, and w may commit (a
// claim so recorded expires with its lease, as after any cancelled write).
func (b *batcher) do(ctx context.Context, w *write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.inflight < b.flights {
		b.inflight++
		b.mu.Unlock()
		err := w.alone()
		b.next()
		return err
	}
	w.done = make(chan struct{})
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	if b.queued != nil {
		b.queued()
	}
	select {
	case <-w.done:
		if w.err == errAlone {
			return w.alone()
		}
		return w.err
	case <-ctx.Done():
		b.mu.Lock()
		if !w.taken {
			w.gone = true
		}
		b.mu.Unlock()
		return ctx.Err()
	}
}

// next starts sending what gathered while the caller's write was in
// flight, or ends the caller's flight.
func (b *batcher) next() {
	b.mu.Lock()
	ws := b.take()
	b.mu.Unlock()
	if len(ws) > 0 {
		go b.drain(ws)
	}
}

// drain sends batches until the queue stays empty.
func (b *batcher) drain(ws []*write) {
	for len(ws) > 0 {
		b.send(ws)
		b.mu.Lock()
		ws = b.take()
		b.mu.Unlock()
	}
}

// take removes up to maxBatch writes from the queue, skipping those their
// callers gave up; when there are none, the caller's flight ends. b.mu
// must be held.
func (b *batcher) take() []*write {
	var ws []*write
	n := 0
	for _, w := range b.queue {
		n++
		if w.gone {
			continue
		}
		w.taken = true
		ws = append(ws, w)
		if len(ws) == maxBatch {
			break
		}
	}
	b.queue = b.queue[n:]
	if len(b.queue) == 0 {
		b.queue = nil // let the backing array go
	}
	if len(ws) == 0 {
		b.inflight--
	}
	return ws
}

// send runs ws and delivers each write's outcome.
func (b *batcher) send(ws []*write) {
	if len(ws) == 1 {
		// Nothing to share: the write runs as a lone caller's would, on
		// its caller's context.
		ws[0].err = ws[0].alone()
		close(ws[0].done)
		return
	}
	slices.SortStableFunc(ws, func(x, y *write) int {
		return cmp.Or(cmp.Compare(x.id.Tenant, y.id.Tenant), cmp.Compare(x.id.Tool, y.id.Tool), cmp.Compare(x.id.Key, y.id.Key))
	})
	if b.beforeSend != nil {
		b.beforeSend(ws)
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	errs := make([]error, len(ws))
	err := b.s.with(ctx, func(c *pgxpool.Conn) error {
		if b.merge != nil {
			return b.merged(ctx, c, ws, errs)
		}
		return b.pipeline(ctx, c, ws, errs)
	})
	var le *lostError
	switch {
	case err == nil:
		for i, w := range ws {
			w.err = errs[i]
			close(w.done)
		}
	case errors.As(err, &le), errors.Is(err, ErrPoolTimeout):
		// Whether the commit happened is unknown (or nothing was sent):
		// each member's own retry reads its row back by its token.
		finish(ws, err)
	case errors.Is(err, context.DeadlineExceeded):
		finish(ws, &lostError{err: errors.New("postgres: a batch of writes took longer than " + batchTimeout.String())})
	default:
		finish(ws, errAlone)
	}
}

func finish(ws []*write, err error) {
	for _, w := range ws {
		w.err = err
		close(w.done)
	}
}

// pipeline sends ws in one transaction, in one round trip, and records each
// statement's outcome in errs. It returns the first error that is not an
// outcome: then nothing committed, or (a lost connection) it is unknown.
func (b *batcher) pipeline(ctx context.Context, c *pgxpool.Conn, ws []*write, errs []error) error {
	pb := &pgx.Batch{}
	pb.Queue("BEGIN")
	if b.async {
		pb.Queue("SET LOCAL synchronous_commit TO off")
	}
	for _, w := range ws {
		pb.Queue(w.query, w.args...)
	}
	pb.Queue("COMMIT")
	br := c.SendBatch(ctx, pb)
	err := b.results(br, ws, errs)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// merged sends ws as b.merge's one statement and records each write's
// outcome in errs. Of writes with the same ID (ws is in ID order) only the
// first is in the statement; the others' outcome is pgx.ErrNoRows, as if
// each had run after it.
func (b *batcher) merged(ctx context.Context, c *pgxpool.Conn, ws []*write, errs []error) error {
	first := make([]*write, 0, len(ws))
	for i, w := range ws {
		if i == 0 || w.id != ws[i-1].id {
			first = append(first, w)
		}
	}
	query, args := b.merge(first)
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	took := make(map[ledger.ID]bool, len(first))
	for rows.Next() {
		var id ledger.ID
		if err := rows.Scan(&id.Tenant, &id.Tool, &id.Key); err != nil {
			return err
		}
		took[id] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i, w := range ws {
		errs[i] = pgx.ErrNoRows
		if took[w.id] {
			errs[i] = nil
			delete(took, w.id)
		}
	}
	return nil
}

func (b *batcher) results(br pgx.BatchResults, ws []*write, errs []error) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	if b.async {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	for i, w := range ws {
		err := w.scan(br.QueryRow())
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		errs[i] = err
	}
	tag, err := br.Exec()
	if err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		// The server rolled the transaction back without saying why.
		return &pgconn.PgError{Code: "25P02", Message: "the batch's transaction ended with " + tag.String()}
	}
	return nil
}

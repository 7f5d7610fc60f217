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

// Group commit by the client. With a connection per caller, 64 callers on
// a 2-core machine kept the server's processes queueing for the WAL write
// lock, each commit flushed on its own turn, and spent 0.35 to 2 ms of
// server CPU per claim and completion (against about 0.15 ms batched); the
// throughput was about twice a lone caller's. A batcher instead gathers the
// writes that arrive while its batches are in flight and sends them in one
// round trip and one transaction: one commit, one WAL flush for all.
//
// Each write keeps its own outcome. Every statement in a batch is one that
// cannot fail for another record's sake: the claim insert does nothing on a
// conflict, a transition's compare-and-set matches no row when its state,
// owner or fence is stale. Writes of one kind become one statement (merge):
// a multi-row insert or update whose parameters are arrays, in which each
// row is decided alone and the rows returned say which writes took effect.
// Most of a single-row write's cost on the server is the statement's, not
// the row's. A statement that fails anyway (bytes the server refuses)
// aborts the shared transaction, so nothing of the batch is committed, and
// every member then runs its write on its own, as it would without
// batching, and gets exactly its own error. The members are in key order,
// so batches of this process or another, inserting or updating the same
// records, mostly take their row locks in the same order; when they do not
// (two shapes in one batch), PostgreSQL's deadlock check aborts one, whose
// members then run alone.
//
// A lone caller never waits for a window: with fewer than maxFlights in
// flight it runs its own statement at once, on its own context, exactly the
// unbatched path.

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
	out  error // the outcome in a batch, kept by the sender until it is final
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
	// Tests only: queued runs after a write joined the queue; beforeSend
	// and afterSend run with each batch of two or more before it is sent
	// and once it is done, with the batch's error.
	queued     func()
	beforeSend func(ws []*write)
	afterSend  func(ws []*write, err error)

	// flights bounds the writes and batches in flight at once.
	flights int
	// merge, when set, makes one statement of the writes of a batch that
	// share a query (at most one per ID): it returns a statement that does
	// what each of theirs does, its rows the ID of each write that took
	// effect followed by what that write's own statement returns, or not
	// ok to send them one by one.
	merge func(ws []*write) (query string, args []any, ok bool)

	mu       sync.Mutex // guards queue and inflight, and each queued write's taken and gone
	queue    []*write
	inflight int
}

func newBatcher(s *Store, async bool) *batcher {
	return &batcher{s: s, async: async, flights: maxFlights}
}

// do runs w and returns its error: at once when fewer than b.flights writes
// or batches are in flight, else in the next batch. A caller whose ctx
// ends while w waits in the queue takes it back; once w is in a batch its
// caller still returns at once, and w may commit (a claim so recorded
// expires with its lease, as after any cancelled write).
func (b *batcher) do(ctx context.Context, w *write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.inflight < b.flights {
		b.inflight++
		b.mu.Unlock()
		defer b.next()
		return w.alone()
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
		return cmp.Or(cmp.Compare(x.id.Tenant, y.id.Tenant), cmp.Compare(x.id.Layer, y.id.Layer),
			cmp.Compare(x.id.Tool, y.id.Tool), cmp.Compare(x.id.Key, y.id.Key))
	})
	if b.beforeSend != nil {
		b.beforeSend(ws)
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	stmts, dups := b.plan(ws)
	err := b.s.with(ctx, func(c *pgxpool.Conn) error { return b.pipeline(ctx, c, stmts) })
	if b.afterSend != nil {
		b.afterSend(ws, err)
	}
	var le *lostError
	switch {
	case err == nil:
		for _, st := range stmts {
			for _, w := range st.ws {
				w.err = w.out
				close(w.done)
			}
		}
		// Each after the write of its ID that went first.
		finish(dups, errAlone)
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

// stmt is one statement of a batch: one write's own, or (merged) b.merge's
// for several writes that share a query.
type stmt struct {
	ws     []*write
	query  string
	args   []any
	merged bool
}

// plan turns a batch (in ID order) into its statements. With b.merge, the
// writes that share a query become one statement that holds each ID once;
// a later write of an ID already in it is one of dups, which run alone
// once the batch committed, as if after it. Statements keep the order of
// their first writes.
func (b *batcher) plan(ws []*write) (stmts []stmt, dups []*write) {
	var groups [][]*write
	if b.merge == nil {
		for _, w := range ws {
			groups = append(groups, []*write{w})
		}
	} else {
		at := make(map[string]int)
		for _, w := range ws {
			i, ok := at[w.query]
			if !ok {
				i = len(groups)
				at[w.query] = i
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], w)
		}
	}
	for _, g := range groups {
		if len(g) > 1 {
			first := make([]*write, 0, len(g))
			var again []*write
			for i, w := range g {
				if i > 0 && w.id == g[i-1].id {
					again = append(again, w)
					continue
				}
				first = append(first, w)
			}
			if q, args, ok := b.merge(first); ok {
				stmts = append(stmts, stmt{ws: first, query: q, args: args, merged: true})
				dups = append(dups, again...)
				continue
			}
		}
		for _, w := range g {
			stmts = append(stmts, stmt{ws: []*write{w}, query: w.query, args: w.args})
		}
	}
	return stmts, dups
}

// pipeline sends stmts in one round trip, in one transaction unless it is
// a single durable statement, and records each write's outcome in its out.
// It returns the first error that is not an outcome: then nothing
// committed, or (a lost connection) it is unknown.
func (b *batcher) pipeline(ctx context.Context, c *pgxpool.Conn, stmts []stmt) error {
	tx := len(stmts) > 1 || b.async
	pb := &pgx.Batch{}
	if tx {
		pb.Queue("BEGIN")
		if b.async {
			pb.Queue("SET LOCAL synchronous_commit TO off")
		}
	}
	for _, st := range stmts {
		pb.Queue(st.query, st.args...)
	}
	if tx {
		pb.Queue("COMMIT")
	}
	br := c.SendBatch(ctx, pb)
	err := b.results(br, stmts, tx)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func (b *batcher) results(br pgx.BatchResults, stmts []stmt, tx bool) error {
	if tx {
		if _, err := br.Exec(); err != nil {
			return err
		}
		if b.async {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
	}
	for _, st := range stmts {
		if st.merged {
			rows, err := br.Query()
			if err == nil {
				err = scanMerged(rows, st.ws)
			}
			if err != nil {
				return err
			}
			continue
		}
		w := st.ws[0]
		w.out = w.scan(br.QueryRow())
		if w.out != nil && !errors.Is(w.out, pgx.ErrNoRows) {
			return w.out
		}
	}
	if !tx {
		return nil
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

// scanMerged reads a merged statement's rows, each the ID of a write that
// took effect followed by the columns that write's own statement returns,
// and gives each row to its write's scan. A write without a row matched
// nothing: pgx.ErrNoRows.
func scanMerged(rows pgx.Rows, ws []*write) error {
	defer rows.Close()
	byID := make(map[ledger.ID]*write, len(ws))
	for _, w := range ws {
		w.out = pgx.ErrNoRows
		byID[w.id] = w
	}
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) < 4 {
			return errors.New("postgres: a batch statement returned a row without the record's identity")
		}
		// Text comes back as its bytes in either format.
		w := byID[ledger.ID{Tenant: string(raw[0]), Layer: string(raw[1]), Tool: string(raw[2]), Key: string(raw[3])}]
		if w == nil {
			return errors.New("postgres: a batch statement returned a record it was not sent")
		}
		if w.out = w.scan(afterID{rows}); w.out != nil {
			return w.out
		}
	}
	return rows.Err()
}

// afterID is the current row of a merged statement without its leading
// identity columns.
type afterID struct{ rows pgx.Rows }

func (r afterID) Scan(dest ...any) error {
	return r.rows.Scan(append([]any{nil, nil, nil, nil}, dest...)...)
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.Store = (*Store)(nil)

// Errors callers branch on with errors.Is.
var (
	// ErrNotDatabase: the file is not a SQLite database, or it is one that
	// belongs to another application. The file is left untouched.
	ErrNotDatabase = errors.New("sqlite: not an mcpledger database")
	// ErrSchemaTooNew: the database was written by a newer mcpledger whose
	// schema this build does not know. The file is left untouched.
	ErrSchemaTooNew = errors.New("sqlite: database schema is newer than this build")
	// ErrBusy: another process held the write lock for longer than the busy
	// timeout. Nothing was written; the call may be retried.
	ErrBusy = errors.New("sqlite: database is locked by another connection")
	// ErrDamaged: the file is a SQLite database whose pages SQLite cannot
	// read (cut short, overwritten): restore it from a backup. It also
	// matches ErrNotDatabase, which older callers check for.
	ErrDamaged = errors.New("sqlite: the ledger file is damaged")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("sqlite: store is closed")
)

// Synchronous is the durability of a commit.
type Synchronous int

const (
	// SyncFull (the default) fsyncs the write-ahead log on every commit: a
	// claim is on disk before Claim returns, so before the side effect runs.
	SyncFull Synchronous = iota
	// SyncNormal fsyncs only at checkpoints. It is faster, and the database
	// stays consistent, but a power loss or OS crash (not a process crash)
	// can roll back the last commits: a claim whose side effect already ran
	// may vanish, and the next caller executes the operation a second time.
	// Use it only where a rare duplicate after a machine crash is acceptable.
	SyncNormal
)

func (s Synchronous) pragma() string {
	if s == SyncNormal {
		return "NORMAL"
	}
	return "FULL"
}

// Options configure a Store. The zero value (or nil) is the durable default.
type Options struct {
	// Now is the clock used for every timestamp the store writes or
	// compares (leases, retention, created/updated). time.Now when nil.
	Now func() time.Time
	// Synchronous is SyncFull unless set; see SyncNormal for the risk.
	Synchronous Synchronous
	// Durability is ledger.Durable unless set. ledger.WriteBehind (here or
	// asked for by a caller's context, see ledger.WithDurability) commits
	// a run's outcome without an fsync: claims stay durable, and the
	// outcome reaches the disk with the next durable commit or a flush
	// WriteBehindWindow later, whichever comes first. It changes nothing
	// under SyncNormal, which fsyncs no commit.
	Durability ledger.Durability
	// WriteBehindWindow bounds how long a written-behind outcome may stay
	// off the disk (20ms when zero).
	WriteBehindWindow time.Duration
	// BusyTimeout is how long a write waits for a lock held by another
	// process before failing with ErrBusy (5s when zero).
	BusyTimeout time.Duration
	// PollInterval and MaxPollInterval bound how often Wait re-reads a
	// record that another process may change (10ms doubling up to 1s when
	// zero). Changes made through this Store wake waiters at once.
	PollInterval    time.Duration
	MaxPollInterval time.Duration
	// MaxBatch caps how many writes share one transaction (256 when zero).
	MaxBatch int
	// ReadOnly opens an existing ledger for reading only: the file and
	// its folder are never created, the schema is never migrated, and
	// every write fails with ErrReadOnly. A missing or empty file fails
	// with ErrNoLedger, an older schema with ErrSchemaTooOld.
	ReadOnly bool
	// Logger gets the warning, once per path and process, that the
	// ledger file is readable by other users, and at debug level each
	// purge batch: its records and how long it held the write lock
	// (slog.Default when nil).
	Logger *slog.Logger

	// immutable: a ReadOnly Open found the ledger file to be the whole
	// ledger, in a folder that cannot hold a -shm file (immutableOpen).
	immutable bool
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Now == nil {
		v.Now = time.Now
	}
	if v.BusyTimeout <= 0 {
		v.BusyTimeout = 5 * time.Second
	}
	if v.PollInterval <= 0 {
		v.PollInterval = 10 * time.Millisecond
	}
	if v.MaxPollInterval <= 0 {
		v.MaxPollInterval = time.Second
	}
	if v.MaxPollInterval < v.PollInterval {
		v.MaxPollInterval = v.PollInterval
	}
	if v.MaxBatch <= 0 {
		v.MaxBatch = 256
	}
	if v.WriteBehindWindow <= 0 {
		v.WriteBehindWindow = 20 * time.Millisecond
	}
	return v
}

// Store is the SQLite ledger. It is safe for concurrent use, and several
// processes may open the same file.
type Store struct {
	path string
	opts Options

	// wdb has one connection, owned by the writer goroutine: every write
	// goes through ops so that concurrent writers share one commit.
	wdb *sql.DB
	// rdb is a pool of connections used only for reads (WAL lets them run
	// beside the writer).
	rdb *sql.DB

	// wmu guards the write queue. busy is set while a goroutine owns the
	// write connection; idle is signalled when it is released.
	wmu    sync.Mutex
	idle   sync.Cond
	queue  []*op
	busy   bool
	closed bool
	// kick hands a non-empty queue to the writer goroutine.
	kick      chan struct{}
	quit      chan struct{}
	writerEnd chan struct{}
	closeOnce sync.Once
	closeErr  error

	// mu guards watchers, the per-record wake-up channels of Wait.
	mu       sync.Mutex
	watchers map[ledger.ID]*watcher

	// commits counts committed write transactions (group commit shows as
	// fewer commits than writes).
	commits atomic.Int64
	// relaxed: the write connection runs synchronous=NORMAL. Only the
	// goroutine that owns the write connection reads or sets it.
	relaxed bool
	// unsynced: a commit without fsync wrote since the last durable one.
	unsynced atomic.Bool
	// flushing: a flush of unsynced commits is scheduled.
	flushing atomic.Bool
	// readers is the size of the read connection pool.
	readers int
	// waitHook, set only by tests before use, runs when Wait blocks.
	waitHook func(ledger.ID)
	// commitHook, set only by tests before use, runs on the writer
	// after each commit that wrote, with whether it skipped the fsync.
	commitHook func(lazy bool)
}

// Open opens the ledger at path, creating it (mode 0600, folder 0700) when
// it does not exist, and brings its schema up to date. A file that is not an
// mcpledger database, or whose schema is newer than this build, is refused
// and never modified.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	if err := driverReady(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: resolve %q: %w", path, err)
	}
	if o.ReadOnly {
		err = checkReadable(abs)
		if err == nil {
			o.immutable, err = immutableOpen(abs)
		}
	} else {
		err = prepareFile(abs)
	}
	if err == nil && !o.ReadOnly {
		err = prepareCompanions(abs)
	}
	if err != nil {
		return nil, err
	}
	warnMode(abs, o.Logger)
	s := &Store{
		path:      abs,
		opts:      o,
		kick:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		writerEnd: make(chan struct{}),
		watchers:  make(map[ledger.ID]*watcher),
	}
	s.idle.L = &s.wmu
	s.wdb, err = sql.Open(sqlDriver(), s.dsn(o.ReadOnly))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	// One writer connection: SQLite has one writer at a time anyway, and a
	// single connection lets the writer goroutine batch commits.
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if o.ReadOnly {
		err = s.checkSchema(ctx)
	} else {
		err = s.migrate(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, s.wdb.Close())
	}
	s.rdb, err = sql.Open(sqlDriver(), s.dsn(true))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open %s: %w", abs, err), s.wdb.Close())
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	s.readers = n
	s.rdb.SetMaxOpenConns(n)
	s.rdb.SetMaxIdleConns(n)
	s.rdb.SetConnMaxIdleTime(0)
	go s.writer()
	return s, nil
}

// dsn is the connection string of the build's driver (see Driver).
func (s *Store) dsn(readOnly bool) string { return dsnFor(s.path, s.opts, readOnly) }

// Close stops the writer and closes the database. Pending writes finish
// first; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		// Outcomes written behind reach the disk before the store closes.
		flushErr := s.flush()
		s.wmu.Lock()
		s.closed = true
		for s.busy {
			s.idle.Wait()
		}
		s.wmu.Unlock()
		close(s.quit)
		<-s.writerEnd
		// Blocked waiters re-read, fail on the closed database and return.
		defer s.wakeAll()
		s.closeErr = errors.Join(flushErr, s.rdb.Close(), s.wdb.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("sqlite: close %s: %w", s.path, s.closeErr)
		}
	})
	return s.closeErr
}

// logger is Options.Logger, or slog.Default when none was given.
func (s *Store) logger() *slog.Logger {
	if s.opts.Logger != nil {
		return s.opts.Logger
	}
	return slog.Default()
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// classify turns driver errors into the package's sentinels.
func (s *Store) classify(err error) error {
	switch errorKind(err) {
	case kindBusy:
		return &BusyError{Path: s.path, Timeout: s.opts.BusyTimeout, err: err}
	case kindReadOnly:
		if s.opts.ReadOnly {
			return fmt.Errorf("sqlite: %s: %w", s.path, ErrReadOnly)
		}
		return &FaultError{Path: s.path, Kind: ErrUnwritable, err: err}
	case kindFull:
		return &FaultError{Path: s.path, Kind: ErrFull, err: err}
	case kindNotDatabase:
		// The file passed the header check at Open: what SQLite cannot
		// read past it is damage, not a foreign file.
		return &DamagedError{Path: s.path, Err: err}
	}
	return err
}

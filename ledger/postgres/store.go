package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

var _ ledger.Store = (*Store)(nil)

// ErrPoolTimeout: every connection of the pool stayed busy for
// Options.AcquireTimeout. Nothing was written.
var ErrPoolTimeout = errors.New("postgres: no pooled connection became free in time")

// DefaultSchema holds the ledger's tables when neither Options.Schema nor the
// URL's search_path names one.
const DefaultSchema = "mcpledger"

// Defaults for Options fields left zero.
const (
	DefaultAcquireTimeout = 10 * time.Second
	// DefaultMaxConns is the pool size when neither Options.MaxConns nor
	// the URL's pool_max_conns sets one.
	DefaultMaxConns     = 16
	DefaultPollMin      = 20 * time.Millisecond
	DefaultPollMax      = time.Second
	DefaultBatchSize    = 500
	DefaultReconnectFor = 15 * time.Second
)

// maxSchemaLen keeps the notification channel "mcpledger:<schema>" within
// PostgreSQL's 63-byte identifier limit.
const maxSchemaLen = 53

// Options tune a Store. A nil *Options means all defaults.
type Options struct {
	// Schema holds the ledger's tables. Default: the first entry of the
	// URL's search_path parameter, else DefaultSchema. It is created when
	// missing.
	Schema string
	// Now is the clock every stored timestamp and every lease and expiry
	// comparison uses (time.Now when nil). The database's own clock is never
	// consulted, so tests can move time and many hosts agree with their own
	// clocks' skew only.
	Now func() time.Time
	// MaxConns is the pool size (DefaultMaxConns when zero), sized for the
	// work, not by the CPU count: concurrent claims and transitions are
	// gathered into batches (at most two in flight per kind, so six
	// connections carry any number of writers), and the rest of the pool
	// serves reads, take-overs and followers' polls. Connections open
	// only as callers need them. Followers waiting in Wait hold no
	// connection between polls; one more connection per Store listens for
	// notifications.
	MaxConns int32
	// AcquireTimeout bounds the wait for a pooled connection; past it an
	// operation fails with ErrPoolTimeout instead of queueing without end.
	AcquireTimeout time.Duration
	// PollMin and PollMax bound the poll a follower in Wait falls back to
	// when no notification arrives (the listener is reconnecting or a
	// notification was lost). With a live listener Wait polls at PollMax.
	// In the portable mode Wait always polls, from PollMin doubling to
	// PollMax.
	PollMin, PollMax time.Duration
	// BatchSize is how many records ExpireLeases and Purge change per
	// statement, so neither holds many row locks or a long transaction.
	BatchSize int
	// ReconnectFor is how long an operation keeps retrying while the server
	// is unreachable or restarting. Negative disables retries.
	ReconnectFor time.Duration
	// Durability is ledger.Durable unless set. ledger.WriteBehind (here or
	// asked for by a caller's context, see ledger.WithDurability) commits
	// a run's outcome with synchronous_commit off: claims stay durable,
	// the outcome is visible at once, and the server's WAL writer flushes
	// it within three times wal_writer_delay (600ms by default) or with
	// the next durable commit, whichever comes first. The portable mode
	// writes everything durably.
	Durability ledger.Durability
	// Portable runs the store without the PostgreSQL features that
	// PG-wire distributed databases lack (see portable.go): no
	// LISTEN/NOTIFY (followers poll), no advisory locks, and serialization
	// failures (SQLSTATE 40001) retried with the same key. The URL
	// parameter mcpledger_mode=portable (ModeParam) asks for it too.
	Portable bool
}

// Store is a ledger.Store on PostgreSQL, shared by every process that opens
// the same database and schema. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	now    func() time.Time

	acquireTimeout time.Duration
	pollMin        time.Duration
	pollMax        time.Duration
	batchSize      int
	reconnectFor   time.Duration
	durability     ledger.Durability
	portable       bool

	waiters *waiters
	lis     *listener

	// Claims and transitions from concurrent callers share round trips and
	// commits (batch.go); write-behind transitions commit in their own.
	claims, transitions, behind *batcher

	closeOnce sync.Once
}

// IsURL reports whether s is a PostgreSQL connection URL (postgres:// or
// postgresql://), the forms Open accepts.
func IsURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Open connects to the database at url (postgres://user:pass@host:port/db?...
// or postgresql://...), migrates the ledger schema under an advisory lock
// (in the portable mode, by racing for each migration's version row),
// and returns the Store. A schema migrated by a newer build is refused with
// ErrSchemaTooNew.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if !IsURL(url) {
		return nil, fmt.Errorf("postgres: open: want a postgres:// or postgresql:// URL, got %q", redactURL(url))
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	url, portable, err := takeMode(url)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL with its password.
		return nil, fmt.Errorf("postgres: open: parse url %q: %w", redactURL(url), errors.New(redactURL(err.Error())))
	}
	schema := o.Schema
	if schema == "" {
		schema = firstSearchPath(cfg.ConnConfig.RuntimeParams["search_path"])
	}
	if schema == "" {
		schema = DefaultSchema
	}
	if len(schema) > maxSchemaLen || strings.ContainsRune(schema, 0) {
		return nil, fmt.Errorf("postgres: open: schema name %q is longer than %d bytes", schema, maxSchemaLen)
	}
	// Every pooled connection resolves the ledger's tables in its schema; the
	// SQL in this package names no schema.
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	if !strings.Contains(url, "pool_max_conns=") {
		cfg.MaxConns = DefaultMaxConns // else the URL's own pool size
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	// Named connections let an operator tell the ledger's sessions apart
	// in pg_stat_activity; a name from the URL is kept.
	lisCfg := cfg.ConnConfig.Copy()
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "mcpledger"
		lisCfg.RuntimeParams["application_name"] = "mcpledger-listener"
	}
	s := &Store{
		schema:         schema,
		now:            o.Now,
		acquireTimeout: positive(o.AcquireTimeout, DefaultAcquireTimeout),
		pollMin:        positive(o.PollMin, DefaultPollMin),
		pollMax:        positive(o.PollMax, DefaultPollMax),
		batchSize:      o.BatchSize,
		reconnectFor:   o.ReconnectFor,
		durability:     o.Durability,
		portable:       o.Portable || portable,
		waiters:        newWaiters(),
	}
	s.claims, s.transitions, s.behind = newBatcher(s, false), newBatcher(s, false), newBatcher(s, true)
	s.claims.merge = mergeClaims
	s.transitions.merge, s.behind.merge = mergeTransitions, mergeTransitions
	if s.now == nil {
		s.now = time.Now
	}
	if s.pollMax < s.pollMin {
		s.pollMax = s.pollMin
	}
	if s.batchSize <= 0 {
		s.batchSize = DefaultBatchSize
	}
	switch {
	case s.reconnectFor == 0:
		s.reconnectFor = DefaultReconnectFor
	case s.reconnectFor < 0:
		s.reconnectFor = 0
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	migrateFunc := migrate
	if s.portable {
		migrateFunc = migrateRacing
	}
	if err := migrateFunc(ctx, s.pool, schema); err != nil {
		s.pool.Close()
		return nil, err
	}
	s.lis = newListener(lisCfg, "mcpledger:"+schema, s.waiters)
	return s, nil
}

// Schema is the PostgreSQL schema that holds this store's tables.
func (s *Store) Schema() string { return s.schema }

// Close stops the listener and closes the pool. Calls in flight fail.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.lis.stop()
		// Followers elsewhere would find these by polling; sending them
		// spares them the wait when a process exits right after a write.
		if payloads := s.lis.takePending(); len(payloads) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, s.lis.channel, payloads); err != nil {
				// Nothing to undo: the followers poll.
				payloads = nil
			}
			cancel()
		}
		s.pool.Close()
		// Waiters read again, find the pool closed and return.
		s.waiters.wakeAll()
	})
	return nil
}

// clock returns the injected time at the database's resolution, so a record
// returned by a write equals the same record read back.
func (s *Store) clock() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// conn acquires a pooled connection, waiting at most acquireTimeout.
func (s *Store) conn(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, s.acquireTimeout)
	defer cancel()
	c, err := s.pool.Acquire(actx)
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if actx.Err() != nil {
		st := s.pool.Stat()
		if st.AcquiredConns() < st.MaxConns() {
			// Room in the pool: the time went into connecting, so the
			// server is slow or unreachable, not the pool exhausted.
			return nil, &lostError{err: fmt.Errorf("postgres: no connection to the server within %v: %w", s.acquireTimeout, err), unsent: true}
		}
		return nil, fmt.Errorf("%w: waited %v, all %d connections in use", ErrPoolTimeout, s.acquireTimeout, st.MaxConns())
	}
	return nil, err
}

func positive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// firstSearchPath returns the first schema of a search_path value, unquoted.
func firstSearchPath(v string) string {
	first, _, _ := strings.Cut(v, ",")
	first = strings.TrimSpace(first)
	if len(first) >= 2 && first[0] == '"' && first[len(first)-1] == '"' {
		return strings.ReplaceAll(first[1:len(first)-1], `""`, `"`)
	}
	if first == "$user" {
		return ""
	}
	// Unquoted identifiers fold to lower case, as PostgreSQL folds them.
	return strings.ToLower(first)
}

// redactURL hides the passwords of every DSN in s: user info and
// password= parameters (MaskDSN).
func redactURL(s string) string { return MaskDSN(s) }

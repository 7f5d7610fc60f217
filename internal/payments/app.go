package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/outbox"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultDailyLimitCents is the most one payee may receive in 24 hours.
const DefaultDailyLimitCents = 1_000_000

// Config configures an App. Only DB is required.
type Config struct {
	// DB is the payments database (SQLite file).
	DB string
	// Tokens maps bearer tokens to tenants (see LoadTokens). When set, the
	// server is served only with a valid token (HTTPHandler), every call's
	// tenant is its token's, and keys are kept per tenant end to end: the
	// guard's ledger and the payments table.
	Tokens map[string]string
	// Ledger is the idempotency ledger: a SQLite file (default: DB with
	// ".ledger.db" in place of ".db", beside it) or a postgres:// URL that
	// several replicas share.
	Ledger string
	// Downstream is the database of the downstream that receives
	// payment.created (default: DB with ".downstream.db").
	Downstream string
	// Lease, Retention and InProgressWait configure the guard
	// (server.Options); zero means its defaults.
	Lease, Retention, InProgressWait time.Duration
	// DeliveryLease is how long one delivery of an event is reserved for
	// one dispatcher (10s when zero); after a crash, the event is delivered
	// again once it ends.
	DeliveryLease time.Duration
	// DailyLimitCents caps what one payee receives in 24 hours
	// (DefaultDailyLimitCents when zero).
	DailyLimitCents int64
	// Unguarded serves the tools without the idempotency guard: the bare
	// server a load benchmark sets the guarded one beside. create_payment
	// then takes its key from the request itself (_meta, else the
	// idempotency_key argument) and the payments table's unique key is all
	// that keeps a key from paying twice; nothing is written to the ledger.
	Unguarded bool
	// Faults are armed fault hooks; FaultWriter gets their "reached" lines
	// (os.Stderr when nil).
	Faults      Faults
	FaultWriter io.Writer
	Logger      *slog.Logger // slog.Default when nil
}

// Paths fills the default ledger and downstream paths from DB.
func (c Config) Paths() Config {
	base := strings.TrimSuffix(c.DB, ".db")
	if c.Ledger == "" {
		c.Ledger = base + ".ledger.db"
	}
	if c.Downstream == "" {
		c.Downstream = base + ".downstream.db"
	}
	return c
}

// App is the payments server with its databases, guard and dispatcher.
type App struct {
	cfg Config
	// db writes the payments database on one connection, shared by the
	// payment writer and the dispatcher; rdb reads it beside them (WAL).
	db, rdb *sql.DB
	// payments writes the handlers' payments, in batches (see batch.go).
	payments *writer
	ledger   ledger.Store
	guard    *server.Guard
	down     *Downstream
	disp     *outbox.Dispatcher
	srv      *mcp.Server
	log      *slog.Logger

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating when needed) the three databases and builds the
// MCP server.
func Open(ctx context.Context, cfg Config) (_ *App, err error) {
	if cfg.DB == "" {
		return nil, errors.New("payments: no database path")
	}
	cfg = cfg.Paths()
	if cfg.DailyLimitCents <= 0 {
		cfg.DailyLimitCents = DefaultDailyLimitCents
	}
	if cfg.DeliveryLease <= 0 {
		cfg.DeliveryLease = 10 * time.Second
	}
	if cfg.FaultWriter == nil {
		cfg.FaultWriter = os.Stderr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &App{cfg: cfg, log: cfg.Logger}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Close())
		}
	}()
	if a.db, err = openSQLite(cfg.DB); err != nil {
		return nil, err
	}
	// One writer connection: the payment writer and the dispatcher take
	// turns on it in Go rather than in SQLite's busy handler (batch.go).
	a.db.SetMaxOpenConns(1)
	if a.rdb, err = openSQLite(cfg.DB); err != nil {
		return nil, err
	}
	if err := migrate(ctx, a.db); err != nil {
		return nil, err
	}
	a.payments = newWriter(a.db)
	if a.ledger, err = openLedger(ctx, cfg.Ledger); err != nil {
		return nil, fmt.Errorf("payments: ledger: %w", err)
	}
	if a.down, err = OpenDownstream(ctx, cfg.Downstream); err != nil {
		return nil, err
	}
	var tenant func(context.Context, *mcp.CallToolRequest) (string, error)
	if len(cfg.Tokens) > 0 {
		tenant = server.TenantFromToken
	}
	a.guard = server.New(a.ledger, &server.Options{
		Tenant:         tenant,
		Lease:          cfg.Lease,
		Retention:      cfg.Retention,
		InProgressWait: cfg.InProgressWait,
		Logger:         cfg.Logger,
		// An UNKNOWN payment is looked up in the payments table, when the
		// next call with its key meets it and in the sweep.
		Reconcilers: a.reconcilers(),
	})
	a.disp = &outbox.Dispatcher{
		DB:         a.db,
		Deliver:    a.deliver,
		Lease:      cfg.DeliveryLease,
		Poll:       200 * time.Millisecond,
		MinBackoff: 50 * time.Millisecond,
		MaxBackoff: 5 * time.Second,
		Logger:     cfg.Logger,
	}
	a.srv = mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, &mcp.ServerOptions{
		Instructions: "create_payment moves money and runs once per idempotency key: send the key in " +
			"_meta[\"" + wire.MetaKey + "\"] or as idempotency_key, and reuse it when retrying.",
	})
	a.addTools()
	if !cfg.Unguarded {
		a.srv.AddReceivingMiddleware(a.guard.Middleware())
	}
	return a, nil
}

// openSQLite opens a file for use by several connections and processes:
// WAL, a busy timeout, and write transactions that take the lock up front.
func openSQLite(path string) (*sql.DB, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	name, settings, err := appDriver()
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(name, "file:"+path+"?"+settings)
	if err != nil {
		return nil, fmt.Errorf("payments: open %s: %w", path, err)
	}
	return db, nil
}

func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS payments (
		id              TEXT PRIMARY KEY,
		idempotency_key TEXT UNIQUE,
		amount_cents    INTEGER NOT NULL,
		currency        TEXT NOT NULL,
		payee           TEXT NOT NULL,
		memo            TEXT NOT NULL DEFAULT '',
		created_at      INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("payments: migrate: %w", err)
	}
	// The daily limit sums one payee's last 24 hours in every payment's
	// transaction: without this index that is a scan of the whole table,
	// under the write lock, longer with every payment.
	if _, err := db.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS payments_payee ON payments (payee, created_at)`); err != nil {
		return fmt.Errorf("payments: migrate: %w", err)
	}
	return outbox.Migrate(ctx, db, outbox.SQLite)
}

// Server is the MCP server, ready for Run or Connect.
func (a *App) Server() *mcp.Server { return a.srv }

// Guard is the idempotency guard in front of the tools.
func (a *App) Guard() *server.Guard { return a.guard }

// Ledger is the guard's ledger.
func (a *App) Ledger() ledger.Store { return a.ledger }

// openLedger opens a PostgreSQL ledger for a postgres:// URL (replicas
// share it) and an embedded SQLite file otherwise. The concrete stores are
// returned through their own variables so a failed open leaves no typed nil.
func openLedger(ctx context.Context, where string) (ledger.Store, error) {
	if postgres.IsURL(where) {
		st, err := postgres.Open(ctx, where, nil)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	st, err := sqlite.Open(ctx, where, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// DB is the payments database (its write connection).
func (a *App) DB() *sql.DB { return a.db }

// Downstream is the receiver of payment.created.
func (a *App) Downstream() *Downstream { return a.down }

// Dispatcher delivers the outbox to the downstream.
func (a *App) Dispatcher() *outbox.Dispatcher { return a.disp }

// Run runs the outbox dispatcher and the ledger sweeper until ctx ends.
func (a *App) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.guard.Run(ctx) // it ends only with ctx, and returns ctx's error
	}()
	err := a.disp.Run(ctx)
	<-done
	return err
}

// deliver hands one event to the downstream.
func (a *App) deliver(ctx context.Context, e outbox.Event) error {
	if err := a.down.Receive(ctx, e); err != nil {
		return err
	}
	return a.cfg.Faults.at(ctx, a.cfg.FaultWriter, FaultDeliverApplied)
}

// Close closes the databases.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		var errs []error
		if a.down != nil {
			errs = append(errs, a.down.Close())
		}
		if a.guard != nil {
			// Writes the call events still queued, before the ledger closes.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, a.guard.Close(ctx))
			cancel()
		}
		if a.ledger != nil {
			errs = append(errs, a.ledger.Close())
		}
		if a.payments != nil {
			a.payments.close()
		}
		if a.rdb != nil {
			errs = append(errs, a.rdb.Close())
		}
		if a.db != nil {
			errs = append(errs, a.db.Close())
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

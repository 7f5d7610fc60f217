// Command payments is an example MCP server with a non-idempotent
// create_payment tool made safe to repeat by mcpledger's server middleware
// and transactional outbox.
//
//	go run ./examples/payments                        # stdio
//	go run ./examples/payments -http 127.0.0.1:8080   # streamable HTTP
//	go run ./examples/payments -count KEY             # what the downstream saw for KEY
//	go run ./examples/payments -reconcile KEY         # settle an UNKNOWN payment from the payments table
//	go run ./examples/payments -list                  # the payments in the database
//	go run ./examples/payments -http ADDR -unguarded  # without the guard, to measure what it costs
//
// PAYMENTS_FAULT (or -fault) arms crash hooks for tests: for example
// "handler=hang" blocks create_payment before its commit, and
// "deliver-applied=kill" SIGKILLs the process after the downstream applied
// an event; "reconciler=missing" or "reconciler=lie" takes create_payment's
// reconciler away or makes it lie (what agentctl verify's G12 must catch).
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("payments", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg payments.Config
	fs.StringVar(&cfg.DB, "db", "payments.db", "payments database (SQLite)")
	fs.StringVar(&cfg.Ledger, "ledger", "", "idempotency ledger (default: beside -db, NAME.ledger.db)")
	fs.StringVar(&cfg.Downstream, "downstream", "", "downstream database that counts delivered payment.created events (default: NAME.downstream.db)")
	fs.DurationVar(&cfg.Lease, "lease", 0, "PROCESSING lease of a running handler (default 30s)")
	fs.DurationVar(&cfg.DeliveryLease, "delivery-lease", 0, "how long one event delivery is reserved before another may retry it (default 10s)")
	fs.DurationVar(&cfg.InProgressWait, "wait", 0, "how long a duplicate waits for a running call before -31002 (default 5s)")
	fs.Int64Var(&cfg.DailyLimitCents, "limit", payments.DefaultDailyLimitCents, "most one payee may receive in 24h, in cents")
	fs.BoolVar(&cfg.Unguarded, "unguarded", false, "serve without the idempotency guard (the bare server of a load benchmark): only the payments table's unique key stops a key paying twice")
	httpAddr := fs.String("http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	tokens := fs.String("tokens", "", "with -http: a file of bearer tokens, one 'TOKEN TENANT' a line; only requests with one are served, each as its token's tenant")
	tenant := fs.String("tenant", "", "with -count: the tenant the key belongs to (with -tokens)")
	fault := fs.String("fault", os.Getenv(payments.FaultEnv), "fault hooks, point=action[,...] (see package payments)")
	count := fs.String("count", "", "print what the downstream saw for this idempotency key as JSON, and exit")
	reconcile := fs.String("reconcile", "", "settle the UNKNOWN create_payment of this key from the payments table, and exit")
	list := fs.Bool("list", false, "print the payments in the database, newest first, and exit")
	verbose := fs.Bool("v", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h asked for the usage, which fs printed
		}
		return err
	}
	faults, err := payments.ParseFaults(*fault)
	if err != nil {
		return err
	}
	cfg.Faults, cfg.FaultWriter = faults, stderr
	if *tokens != "" {
		if *httpAddr == "" && *count == "" {
			return errors.New("-tokens needs -http: a stdio server has no bearer tokens to check")
		}
		if cfg.Tokens, err = payments.LoadTokens(*tokens); err != nil {
			return err
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, err := payments.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, app.Close()) }()

	switch {
	case *count != "":
		key := payments.PaymentKey(*tenant, *count)
		c, err := app.Downstream().Count(ctx, key)
		if err != nil {
			return err
		}
		n, err := app.Payments(ctx, key)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(struct {
			payments.Counts
			Payments int `json:"payments"`
		}{c, n})
	case *list:
		return listPayments(ctx, app, cfg.DB, stdout)
	case *reconcile != "":
		rec, err := app.Reconcile(ctx, "", *reconcile)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s %s: %s\n", rec.State, rec.Key, rec.ErrorMessage)
		return err
	}

	runDone := make(chan error, 1)
	go func() { runDone <- app.Run(ctx) }()
	defer func() {
		stop()
		// The dispatcher and the sweeper end with the cancellation; any
		// other end is a failure the server's answers did not show.
		if rerr := <-runDone; rerr != nil && !errors.Is(rerr, context.Canceled) {
			err = errors.Join(err, fmt.Errorf("payments: outbox dispatcher: %w", rerr))
		}
	}()
	if *httpAddr == "" {
		err := app.Server().Run(ctx, &mcp.StdioTransport{})
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	return serveHTTP(ctx, app, *httpAddr, stderr)
}

// listPayments prints the payments of app, newest first, one a line.
func listPayments(ctx context.Context, app *payments.App, db string, stdout io.Writer) error {
	list, err := app.List(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err = fmt.Fprintf(stdout, "no payments in %s\n", db)
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	if _, err := fmt.Fprintln(tw, "PAYMENT\tAMOUNT\tPAYEE\tCREATED\tKEY\tMEMO"); err != nil {
		return err
	}
	for _, p := range list {
		if _, err := fmt.Fprintf(tw, "%s\t%d.%02d %s\t%s\t%s\t%s\t%s\n", p.PaymentID, p.AmountCents/100, p.AmountCents%100, p.Currency,
			p.Payee, p.CreatedAt, cmp.Or(p.Key, "-"), p.Memo); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// serveHTTP serves streamable HTTP until ctx ends. It prints the address it
// listens on, so that "-http 127.0.0.1:0" is usable by tests.
func serveHTTP(ctx context.Context, app *payments.App, addr string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := app.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return app.Server() }, nil))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// Scripts and tests read the address from this line.
	if _, err := fmt.Fprintf(stderr, "payments: listening on http://%s/\n", ln.Addr()); err != nil {
		return errors.Join(fmt.Errorf("payments: print the address: %w", err), ln.Close())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Calls in flight get a moment to finish; open SSE streams would hold
	// Shutdown forever, so they are cut after it.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return srv.Close()
	}
	return nil
}

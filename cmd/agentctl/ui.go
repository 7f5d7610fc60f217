package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/internal/console"
)

func init() { register(newUICmd) }

func newUICmd(a *app) *cobra.Command {
	var listen, policyPath string
	c := &cobra.Command{
		Use:   "ui [--listen 127.0.0.1:PORT]",
		Short: "Open the ledger's local web console: records, approvals, UNKNOWN outcomes, stats",
		Long: `ui serves a web console for the ledger on a loopback address and prints its
URL, which carries a random access token: open it in a browser on this
machine. A request without the token is refused (401).

Pages: the records with filters (state, tool, session, tenant, period) and
paging, new records appearing live; one record with its timeline; the calls
waiting for approval, with approve and deny; the UNKNOWN records with a
reconcile form; the figures of agentctl ledger stats as charts. Approvals
and reconciliations are recorded under your name (USER), as the CLI does.`,
		Example: `  agentctl ui
  agentctl ui --listen 127.0.0.1:8765 --ledger postgres://ledger@db/ledger`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			ln, err := listenConsole(listen)
			if err != nil {
				return err
			}
			defer ln.Close()
			policy, err := loadPolicy(policyPath)
			if err != nil {
				return err
			}
			// The console writes approvals and reconciliations, to a
			// ledger that exists: a mistyped --ledger must not show an
			// empty console over a new, empty ledger.
			a.busy.lasting = true // it serves until stopped
			st, err := a.ledger(c.Context(), existing)
			if err != nil {
				return err
			}
			con, err := console.New(console.Options{Store: st, Tenant: a.tenant, Who: a.who() + " (console)", Policy: policy})
			if err != nil {
				return err
			}
			return a.serveConsole(c.Context(), con, ln)
		}),
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "the loopback `ADDR` to serve on (port 0: any free port)")
	a.policyFlag(c, &policyPath)
	return c
}

// listenConsole listens on addr, which must be a loopback address: the
// console acts on the ledger for whoever holds its token, and its token
// travels in plain HTTP.
func listenConsole(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, exitf(exitUsage, "--listen %q: %v; want HOST:PORT such as 127.0.0.1:8765", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, exitf(exitUsage, "--listen %q: the console listens on loopback only; use 127.0.0.1:PORT or [::1]:PORT", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, exitf(exitUsage, "--listen %q: %v; pick a free port, or 127.0.0.1:0 for any", addr, err)
	}
	return ln, nil
}

// serveConsole serves until ctx ends (Ctrl-C). The URL goes to stdout, so
// a script can read it; the rest to stderr.
func (a *app) serveConsole(ctx context.Context, con *console.Console, ln net.Listener) error {
	srv := &http.Server{
		Handler:           con,
		ReadHeaderTimeout: 10 * time.Second,
		// Live pages hold a request open: they end with ctx.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	fmt.Fprintln(a.io.Out, con.URL(ln.Addr()))
	fmt.Fprintf(a.io.Err, "agentctl ui: the console of tenant %s is at the URL above (it holds the access token); Ctrl-C stops it\n", a.tenant)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving the console: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return srv.Close()
	}
	return nil
}

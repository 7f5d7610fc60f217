package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/console"
)

func init() { register(newUICmd) }

func newUICmd(a *app) *cobra.Command {
	var listen, policyPath, approversPath, reconcilersPath string
	c := &cobra.Command{
		Use:   "ui [--listen 127.0.0.1:PORT]",
		Short: "Open the ledger's local web console: records, approvals, UNKNOWN outcomes, stats",
		Long: `ui serves a web console for the ledger on a loopback address and prints its
URL, which carries a random access token: open it in a browser on this
machine. A request without the token is refused (401).

Pages: the records with filters (state, tool, session, tenant, period) and
paging, new records appearing live; one record with its timeline; the calls
waiting for approval, with approve and deny; the UNKNOWN records with a
reconcile form; the figures of agentctl ledger stats as charts.

The console serves one tenant (--tenant): no page and no form reaches
another's records. Alone, you open the printed URL: its token is yours, and
approvals and reconciliations are recorded under your OS account, as the CLI
does. For several people, --approvers FILE gives each a token of their own,
one "TOKEN NAME [TENANT,…]" a line ('#' starts a comment): decisions are
recorded under the NAME of the token used, a policy's distinctApprover
compares it with the requester, and the token reaches only its TENANTs
(the console's tenant when none are listed). The file must be private
(chmod 600): it holds everyone's tokens. Each person opens the printed URL
with ?token=THEIR_TOKEN.

--reconcilers FILE lets downstream systems settle UNKNOWN records: each
line of the private file is "TOKEN NAME [TENANT,...]" as above, and a
system that knows what became of a call POSTs a JSON report to
/api/v1/reconcile with "Authorization: Bearer TOKEN". It is recorded
under the token's NAME, and reaches only the token's tenants. These
tokens open no page of the console; approvers' tokens send no report.`,
		Example: `  agentctl ui
  agentctl ui --listen 127.0.0.1:8765 --ledger postgres://ledger@db/ledger
  agentctl ui --tenant acme --approvers approvers.txt
  agentctl ui --reconcilers reconcilers.txt`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			ln, err := listenConsole(listen)
			if err != nil {
				return err
			}
			// Shutdown in serveConsole closes it already; this closes
			// it on the error paths before that.
			defer func() { _ = ln.Close() }()
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
			opts := console.Options{Store: st, Tenant: a.tenant, Who: a.who(), Policy: policy}
			if approversPath != "" {
				if opts.Approvers, err = approversFile.load(approversPath); err != nil {
					return err
				}
			}
			if reconcilersPath != "" {
				if opts.Reconcilers, err = reconcilersFile.load(reconcilersPath); err != nil {
					return err
				}
			}
			con, err := console.New(opts)
			if err != nil {
				return exitf(exitUsage, "%v", err)
			}
			return a.serveConsole(c.Context(), con, ln, len(opts.Approvers), len(opts.Reconcilers))
		}),
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "the loopback `ADDR` to serve on (port 0: any free port)")
	c.Flags().StringVar(&approversPath, "approvers", "", "the people the console lets in: a private `FILE` of \"TOKEN NAME [TENANT,...]\" lines")
	c.Flags().StringVar(&reconcilersPath, "reconcilers", "", "the systems that may report outcomes to POST /api/v1/reconcile: a private `FILE` of \"TOKEN NAME [TENANT,...]\" lines")
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
func (a *app) serveConsole(ctx context.Context, con *console.Console, ln net.Listener, approvers, reconcilers int) error {
	srv := &http.Server{
		Handler:           con,
		ReadHeaderTimeout: 10 * time.Second,
		// Live pages hold a request open: they end with ctx.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	// A script reads the URL: without it the console is of no use.
	if _, err := fmt.Fprintln(a.io.Out, con.URL(ln.Addr())); err != nil {
		return fmt.Errorf("printing the console's URL: %w; check where stdout goes", err)
	}
	if approvers > 0 {
		a.eprintf("agentctl ui: the console of tenant %s is at the URL above for %d approver(s): each opens it with ?token=THEIR_TOKEN; Ctrl-C stops it\n", a.tenant, approvers)
	} else {
		a.eprintf("agentctl ui: the console of tenant %s is at the URL above (it holds the access token; decisions are recorded as %s); Ctrl-C stops it\n", a.tenant, a.who())
	}
	if reconcilers > 0 {
		a.eprintf("agentctl ui: %d reconciler(s) may report outcomes to POST http://%s%s with their bearer token\n", reconcilers, ln.Addr(), console.ReconcilePath)
	}
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

// tokenFile is a file of named tokens: one "TOKEN NAME [TENANT,...]" a
// line, '#' comment lines and blank lines skipped. The people of the
// console (--approvers) and the systems that report outcomes to it
// (--reconcilers) are each given one.
type tokenFile struct {
	flag string // the flag that names it, for messages
	who  string // what one line names: "approver", "reconciler"
}

var (
	approversFile   = tokenFile{flag: "--approvers", who: "approver"}
	reconcilersFile = tokenFile{flag: "--reconcilers", who: "reconciler"}
)

// load reads the file at path. A file other users may read is refused:
// it holds every token.
func (f tokenFile) load(path string) ([]console.Approver, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, exitf(exitUsage, "%s: %v; pass a file of \"TOKEN NAME [TENANT,...]\" lines", f.flag, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, exitf(exitUsage, "%s %s has mode %04o: other users could read every %s's token; chmod 600 %s", f.flag, path, info.Mode().Perm(), f.who, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, exitf(exitUsage, "%s: %v", f.flag, err)
	}
	var out []console.Approver
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 2 || len(fs) > 3 {
			return nil, exitf(exitUsage, "%s %s line %d: want TOKEN NAME [TENANT,...], got %d words", f.flag, path, i+1, len(fs))
		}
		ap := console.Approver{Token: fs[0], Name: fs[1]}
		if len(fs) == 3 {
			ap.Tenants = strings.Split(fs[2], ",")
		}
		out = append(out, ap)
	}
	if len(out) == 0 {
		return nil, exitf(exitUsage, "%s %s names no %s; add \"TOKEN NAME\" lines", f.flag, path, f.who)
	}
	return out, nil
}

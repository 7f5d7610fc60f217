package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/confirm/terminal"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/telemetry"
)

func init() { register(newProxyCmd) }

type proxyFlags struct {
	listen      string
	metricsAddr string
	policy      string
	session     string
	url         string
	headers     headerFlags // for --url
	durability  string
	// reconcileEvery is the period of the background probes; 0: never.
	reconcileEvery time.Duration
	command        []string // the words after --
}

func newProxyCmd(a *app) *cobra.Command {
	var f proxyFlags
	c := &cobra.Command{
		Use:   "proxy [--listen ADDR] [--metrics-addr ADDR] [--policy FILE] [--session S] [--durability MODE] (-- CMD ARGS | --url URL)",
		Short: "Put the ledger in front of an MCP server, for any MCP host",
		Long: `proxy is an MCP server to the host (stdio, or streamable HTTP with --listen)
and a client to the upstream server (the command after --, or --url). Every
tools/call goes through the ledger: keys, retries, replays of repeated calls,
and confirmation of sensitive calls. Everything else passes through.

The host sees the upstream's tools plus ledger_status and ledger_list.

Ledger sessions (the scope of the re-planning guard): over stdio the one
host is this shell's session (or --session). With --listen each host
session is a ledger session of its own, so two agents calling the same
tool with the same arguments never get each other's replays; --session
NAME makes every host session share one on purpose, and a host may name
its own in the _meta of initialize ("io.github.mcpledger/session").
A call the policy asks about is put to the host as an elicitation when the
host supports it, else on the controlling terminal, else it is denied: allow
the tool in a policy file (--policy) to let it through. A call the policy
queues is answered at once with a result saying it awaits a person's
approval, with its key; after agentctl ledger approve KEY the model's next
same call runs it once, and after ledger deny it gets the denial.

A call whose outcome is lost is UNKNOWN. When the policy names a probe for
its tool (its "reconcile" section), the next call with the key asks the
probe at once, and the proxy also asks it in the background, every
--reconcile-every, about the UNKNOWN records due for an attempt (at most 20
a pass, each with its own growing backoff), so that they settle even when
no one calls again.

A host configures it in place of the server it wraps, for example:

  {"command": "agentctl", "args": ["proxy", "--", "npx", "-y", "some-mcp-server"]}`,
		Example: `  agentctl proxy -- go run ./examples/payments
  agentctl proxy --listen 127.0.0.1:8090 --url http://127.0.0.1:8080/
  agentctl proxy --metrics-addr 127.0.0.1:9464 -- go run ./examples/payments
  agentctl proxy --durability write-behind -- go run ./examples/payments`,
		Args: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash > 0 {
				return exitf(exitUsage, "unexpected argument %q; put the server's command after --, e.g. agentctl proxy -- CMD ARGS", args[0])
			}
			f.command = args[dash:]
			return nil
		},
		RunE: runE(func(c *cobra.Command, _ []string) error {
			return a.proxy(c.Context(), &f)
		}),
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "", "serve streamable HTTP on this loopback `ADDR` (e.g. 127.0.0.1:8090) instead of stdio")
	fl.StringVar(&f.policy, "policy", a.env("MCPLEDGER_POLICY", ""), "the confirmation policy `FILE` (env MCPLEDGER_POLICY; default: built-in rules)")
	fl.StringVar(&f.session, "session", "", "the agent `SESSION` of the records, shared by every host session (default: MCPLEDGER_SESSION; else over stdio this shell's, and with --listen each host session its own)")
	fl.StringVar(&f.url, "url", "", "the upstream MCP server's streamable HTTP endpoint `URL`")
	fl.Var(&f.headers, "header", "an HTTP header for --url, as 'Name: value'; the value may be $VAR (from the environment) or @FILE (repeatable)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics, on loopback (e.g. 127.0.0.1:9464)")
	fl.DurationVar(&f.reconcileEvery, "reconcile-every", proxy.DefaultReconcileEvery, "how often to probe the UNKNOWN calls due for an attempt, for tools the policy names a probe for (`DURATION`; 0: only when a call meets one)")
	a.durabilityFlag(c, &f.durability)
	return c
}

func (a *app) proxy(ctx context.Context, f *proxyFlags) error {
	transport, label, fix, err := a.proxyTransport(f)
	if err != nil {
		return err
	}
	durability, err := parseDurability(f.durability)
	if err != nil {
		return err
	}
	var ln net.Listener
	if f.listen != "" {
		if ln, err = listenLoopback(f.listen); err != nil {
			return err
		}
		// On the way out of serveProxyHTTP, Shutdown has closed it
		// already; this closes it on the error paths before that.
		defer func() { _ = ln.Close() }()
	}
	// The requester of the calls is the OS account the proxy runs as.
	// An upstream started after -- is a child process: once its session
	// closed, nothing sent to it can still take effect (a probe's absent
	// answer is believed at once).
	copts := &client.Options{Durability: durability, Requester: a.who(), Peer: telemetry.PeerOfStdio(), ChildProcess: true}
	if f.url != "" {
		copts.Peer, copts.ChildProcess = telemetry.PeerOfURL(f.url), false
	}
	if f.metricsAddr != "" {
		prom, err := a.startMetrics(ctx, f.metricsAddr)
		if err != nil {
			return err
		}
		defer a.stopMetrics(prom)
		copts.MeterProvider = prom.Provider
	}
	policy := confirm.Default()
	if f.policy != "" {
		if policy, err = confirm.Load(f.policy); err != nil {
			return exitf(exitUsage, "%v; fix the policy file or leave out --policy for the built-in rules", err)
		}
	}
	if f.session == "" {
		f.session = a.getenv("MCPLEDGER_SESSION")
	}
	if f.session == "" && f.listen == "" {
		// One host over stdio: the shell's session, as for call.
		f.session = a.defaultSession()
	}
	a.busy.lasting = true // it serves until stopped
	st, err := a.ledger(ctx, readWrite)
	if err != nil {
		return err
	}
	if f.reconcileEvery < 0 {
		return exitf(exitUsage, "--reconcile-every %s: want a positive duration such as 5s, or 0 to probe only when a call meets an UNKNOWN record", f.reconcileEvery)
	}
	reconcileEvery := f.reconcileEvery
	if reconcileEvery == 0 {
		reconcileEvery = -1 // never
	}
	p, err := proxy.New(ctx, &proxy.Options{
		ReconcileEvery: reconcileEvery,
		Transport:      transport,
		Store:          st,
		Tenant:         a.tenant,
		Session:        f.session,
		Policy:         policy,
		PolicyFile:     f.policy,
		// The controlling terminal, never stdin and stdout: over stdio
		// they carry the host's MCP stream.
		Terminal: &terminal.Prompt{Accessible: a.getenv("ACCESSIBLE") != "", User: a.who()},
		Name:     "agentctl-proxy",
		Version:  version,
		Client:   copts,
		Logger:   a.logger(),
	})
	if err != nil {
		// Nothing was sent to any tool: running again once it is fixed is safe.
		return exitf(exitUnreachable, "cannot reach the MCP server %s: %v; %s", label, err, fix)
	}
	defer a.closeOrWarn("the upstream MCP server", p.Close)
	if ln != nil {
		return a.serveProxyHTTP(ctx, p, ln, f.session)
	}
	// The guarded transport answers a malformed line and keeps serving.
	err = p.Server().Run(ctx, proxy.StdioTransport(a.io.In, a.io.Out))
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		// The host closed stdin or stopped agentctl: a normal end.
		return nil
	}
	return fmt.Errorf("serving the host: %w", err)
}

// proxyTransport checks the upstream flags and returns how to reach the
// upstream, its label for messages, and the fix to name when it cannot be
// reached.
func (a *app) proxyTransport(f *proxyFlags) (tr proxy.TransportFunc, label, fix string, err error) {
	switch {
	case f.url == "" && len(f.command) == 0:
		return nil, "", "", exitf(exitUsage, "name the MCP server: agentctl proxy -- CMD ARGS (stdio), or agentctl proxy --url URL (streamable HTTP)")
	case len(f.headers) > 0 && f.url == "":
		return nil, "", "", exitf(exitUsage, "--header is for --url; an upstream started after -- takes no HTTP headers")
	case f.url != "" && len(f.command) > 0:
		return nil, "", "", exitf(exitUsage, "--url and a command after -- both name a server; pass one of them")
	case f.url != "":
		// The same checks as --url of call and tools.
		up := &upstream{url: f.url, headers: f.headers, getenv: a.getenv}
		if err := up.check(); err != nil {
			return nil, "", "", err
		}
		// The proxy's pooled transport: many host sessions call one
		// upstream at once (see proxy.UpstreamTransport).
		var hc *http.Client
		if len(up.hdr) > 0 {
			hc = &http.Client{Transport: headerTransport{next: proxy.UpstreamTransport, h: up.hdr}}
		}
		return func(context.Context) (mcp.Transport, error) {
			// The standalone SSE stream stays on: it carries the
			// upstream's notifications outside calls (list changes,
			// resource updates) for as long as the proxy runs.
			return &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: hc}, nil
		}, f.url, "check that it runs and --url is right", nil
	}
	words := f.command
	return func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(words[0], words[1:]...)
		// The upstream's log lines go where the proxy's go: the host's log.
		cmd.Stderr = a.io.Err
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}, fmt.Sprintf("%q", strings.Join(words, " ")), "check the command after --", nil
}

// listenLoopback listens on addr, which must be a loopback address: the
// proxy has no authentication of its own, and anyone who reaches it can
// call the upstream's tools.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, exitf(exitUsage, "--listen %q: %v; want HOST:PORT such as 127.0.0.1:8090", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, exitf(exitUsage, "--listen %q: the proxy has no authentication, so it listens on loopback only; use 127.0.0.1:PORT or [::1]:PORT", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, exitf(exitUsage, "--listen %q: %v; pick a free port", addr, err)
	}
	return ln, nil
}

// serveProxyHTTP serves streamable HTTP until ctx ends. It prints the
// address on stderr, so that --listen 127.0.0.1:0 is usable by scripts.
func (a *app) serveProxyHTTP(ctx context.Context, p *proxy.Proxy, ln net.Listener, session string) error {
	// A host's idle keep-alive connection (between its requests, not an
	// open event stream) is closed after a minute: each holds a goroutine
	// and buffers for as long as the host keeps it.
	srv := &http.Server{Handler: p.HTTPHandler(nil), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	// A host's event stream stays open as long as its session: close the
	// sessions, each once its calls in flight have returned, so Shutdown
	// can finish.
	srv.RegisterOnShutdown(func() {
		for ss := range p.Server().Sessions() {
			// Shutting down: the host's session ends either way.
			go func() { _ = ss.Close() }()
		}
	})
	a.eprintf("agentctl proxy: listening on http://%s/ for %s\n", ln.Addr(), p.Upstream())
	if session == "" {
		a.eprintf("agentctl proxy: each host session is a ledger session of its own; --session NAME makes them share one\n")
	} else {
		a.eprintf("agentctl proxy: every host session shares the ledger session %s\n", session)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Asked to stop, it stops: calls still running are cut off, and
		// the ledger keeps what is known of them.
		a.eprintf("agentctl proxy: stopped with requests still running: %v\n", err)
		return srv.Close()
	}
	return nil
}

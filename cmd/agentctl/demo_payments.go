package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/internal/payments"
)

func init() { register(newDemoPaymentsCmd) }

// demoPaymentsCmd is the name of the hidden command that serves the
// payments example on stdio. The demo re-executes agentctl itself with it,
// so `go run ./cmd/agentctl demo` needs no second build.
const demoPaymentsCmd = "__payments"

func newDemoPaymentsCmd(a *app) *cobra.Command {
	var (
		cfg    payments.Config
		fault  string
		detach bool
	)
	c := &cobra.Command{
		Use:    demoPaymentsCmd + " --db PATH [--lease D] [--wait D] [--fault POINT=ACTION] [--detach]",
		Short:  "Serve the payments example on stdio (for agentctl demo)",
		Hidden: true,
		Args:   usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			faults, err := payments.ParseFaults(fault)
			if err != nil {
				return exitf(exitUsage, "%v", err)
			}
			cfg.Faults, cfg.FaultWriter = faults, a.io.Err
			cfg.Logger = slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
			return servePayments(c.Context(), a, cfg, detach)
		}),
	}
	fl := c.Flags()
	fl.StringVar(&cfg.DB, "db", "payments.db", "payments database (SQLite)")
	fl.DurationVar(&cfg.Lease, "lease", 0, "lease of a running create_payment (default 30s)")
	fl.DurationVar(&cfg.InProgressWait, "wait", 0, "how long a duplicate waits for a running call before in_progress (default 5s)")
	fl.StringVar(&fault, "fault", "", "fault hooks, point=action[,...] (see package payments)")
	fl.BoolVar(&detach, "detach", false, "run each call to its end even when the client cancels it, as a bank transfer would")
	return c
}

func servePayments(ctx context.Context, a *app, cfg payments.Config, detach bool) (err error) {
	app, err := payments.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, app.Close()) }()
	srv := app.Server()
	if detach {
		// Outermost, so the guard and the handler both run detached: the
		// call finishes and is recorded even after the client gave up.
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/call" {
					ctx = context.WithoutCancel(ctx)
				}
				return next(ctx, method, req)
			}
		})
	}
	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- app.Run(runCtx) }()
	defer func() {
		stop()
		// The dispatcher and the sweeper end with the cancellation; any
		// other end is a failure the server's answers did not show.
		if rerr := <-runDone; rerr != nil && !errors.Is(rerr, context.Canceled) {
			err = errors.Join(err, fmt.Errorf("payments: outbox dispatcher: %w", rerr))
		}
	}()
	t := &mcp.IOTransport{Reader: io.NopCloser(a.io.In), Writer: nopWriteCloser{a.io.Out}}
	err = srv.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

// demoChildTimeout bounds how long the demo waits for a payments child to
// start; it is the same binary, so anything slower is broken.
const demoChildTimeout = 30 * time.Second

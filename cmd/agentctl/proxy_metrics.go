package main

import (
	"context"
	"net"
	"time"

	"github.com/mcpledger/mcpledger/telemetry/prometheus"
)

// startMetrics serves the proxy's metrics as Prometheus text at
// http://addr/metrics and prints that URL on stderr, so that
// --metrics-addr 127.0.0.1:0 is usable by scripts. Like --listen, it binds
// loopback only: the endpoint has no authentication.
func (a *app) startMetrics(ctx context.Context, addr string) (*prometheus.Endpoint, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, exitf(exitUsage, "--metrics-addr %q: %v; want HOST:PORT such as 127.0.0.1:9464", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, exitf(exitUsage, "--metrics-addr %q: the metrics endpoint has no authentication, so it listens on loopback only; use 127.0.0.1:PORT or [::1]:PORT", addr)
	}
	prom, err := prometheus.Serve(ctx, addr)
	if err != nil {
		return nil, exitf(exitUsage, "--metrics-addr %q: %v; pick a free port", addr, err)
	}
	a.eprintf("agentctl proxy: metrics on %s\n", prom.URL())
	return prom, nil
}

// stopMetrics ends the endpoint. A failure only matters to the log: the
// proxy's work is done by then.
func (a *app) stopMetrics(prom *prometheus.Endpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := prom.Shutdown(ctx); err != nil {
		a.eprintf("agentctl proxy: stopping the metrics endpoint: %v\n", err)
	}
}

// Package prometheus serves the ledger's OpenTelemetry metrics as
// Prometheus text, through the OpenTelemetry Prometheus exporter.
//
// It is apart from package telemetry so that a program importing client
// or server gets the OpenTelemetry API only, with no metrics SDK and no
// Prometheus client:
//
//	prom, err := prometheus.Serve(ctx, "127.0.0.1:9464")
//	if err != nil {
//		return err
//	}
//	defer prom.Shutdown(context.Background())
//	c := client.New(session, store, &client.Options{MeterProvider: prom.Provider})
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// MetricsPath is where Prometheus serves its text.
const MetricsPath = "/metrics"

// Endpoint serves the metrics of its own MeterProvider as Prometheus text
// at MetricsPath, through the OpenTelemetry Prometheus exporter. Give
// Provider to client.Options or server.Options (or make it global with
// otel.SetMeterProvider) so the ledger's instruments report to it.
type Endpoint struct {
	// Provider is the MeterProvider whose instruments are served.
	Provider *sdkmetric.MeterProvider

	addr   string
	srv    *http.Server
	served func() error // Serve's result, waited for once
}

// Serve listens on addr (host:port; port 0 picks a free one) and
// serves until Shutdown is called or ctx ends. The endpoint has no
// authentication: bind it to a loopback address such as 127.0.0.1:9464.
// Each call has its own registry, so several may run in one process.
func Serve(ctx context.Context, addr string) (*Endpoint, error) {
	reg := promclient.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus: prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("prometheus: metrics listener: %w", err), provider.Shutdown(context.WithoutCancel(ctx)))
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	done := make(chan error, 1)
	p := &Endpoint{
		Provider: provider,
		addr:     ln.Addr().String(),
		srv:      &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		served:   sync.OnceValue(func() error { return <-done }),
	}
	go func() {
		err := p.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	context.AfterFunc(ctx, func() {
		if err := p.srv.Close(); err != nil {
			// Nobody is waiting for this close to report to.
			otel.Handle(fmt.Errorf("prometheus: closing the metrics endpoint: %w", err))
		}
	})
	return p, nil
}

// Addr is the address the endpoint listens on, with the port chosen.
func (p *Endpoint) Addr() string { return p.addr }

// URL is the endpoint's address as an http URL of MetricsPath.
func (p *Endpoint) URL() string { return "http://" + p.addr + MetricsPath }

// Shutdown stops serving (waiting for scrapes in progress until ctx ends)
// and shuts the MeterProvider down.
func (p *Endpoint) Shutdown(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, net.ErrClosed) {
		err = nil // ctx of Serve ended first and closed it
	}
	// Shutdown closed the listener, so Serve has returned or is returning.
	return errors.Join(err, p.served(), p.Provider.Shutdown(ctx))
}

package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// MetricsPath is where Prometheus serves its text.
const MetricsPath = "/metrics"

// Prometheus serves the metrics of its own MeterProvider as Prometheus text
// at MetricsPath, through the OpenTelemetry Prometheus exporter. Give
// Provider to client.Options or server.Options (or make it global with
// otel.SetMeterProvider) so the ledger's instruments report to it.
type Prometheus struct {
	// Provider is the MeterProvider whose instruments are served.
	Provider *sdkmetric.MeterProvider

	addr   string
	srv    *http.Server
	served func() error // Serve's result, waited for once
}

// ServePrometheus listens on addr (host:port; port 0 picks a free one) and
// serves until Shutdown is called or ctx ends. The endpoint has no
// authentication: bind it to a loopback address such as 127.0.0.1:9464.
// Each call has its own registry, so several may run in one process.
func ServePrometheus(ctx context.Context, addr string) (*Prometheus, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: metrics listener: %w", err), provider.Shutdown(context.WithoutCancel(ctx)))
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	done := make(chan error, 1)
	p := &Prometheus{
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
			otel.Handle(fmt.Errorf("telemetry: closing the metrics endpoint: %w", err))
		}
	})
	return p, nil
}

// Addr is the address the endpoint listens on, with the port chosen.
func (p *Prometheus) Addr() string { return p.addr }

// URL is the endpoint's address as an http URL of MetricsPath.
func (p *Prometheus) URL() string { return "http://" + p.addr + MetricsPath }

// Shutdown stops serving (waiting for scrapes in progress until ctx ends)
// and shuts the MeterProvider down.
func (p *Prometheus) Shutdown(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, net.ErrClosed) {
		err = nil // ctx of ServePrometheus ended first and closed it
	}
	// Shutdown closed the listener, so Serve has returned or is returning.
	return errors.Join(err, p.served(), p.Provider.Shutdown(ctx))
}

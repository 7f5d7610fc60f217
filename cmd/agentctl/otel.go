package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// serviceName is agentctl's service.name unless OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const serviceName = "agentctl"

// exportTimeout bounds the last export at exit, so a collector that is
// down delays agentctl by at most this much.
const exportTimeout = 5 * time.Second

// otelExportVars are the standard variables that ask for export. Without
// any of them agentctl installs no SDK: a run without a collector neither
// waits for nor complains about one.
var otelExportVars = []string{
	"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
}

// logLevels are the values of --log-level.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

// observability is the run's logger and the OpenTelemetry providers it
// installed, to be shut down (which exports what is left) at exit.
type observability struct {
	logLevel string // --log-level, "" for the command's default
	log      *slog.Logger
	shutdown []func(context.Context) error
}

func (a *app) addObservabilityFlags(c *cobra.Command) {
	c.PersistentFlags().StringVar(&a.obs.logLevel, "log-level", a.env("MCPLEDGER_LOG_LEVEL", ""),
		"log `LEVEL` on stderr: debug, info, warn, error or off (env MCPLEDGER_LOG_LEVEL; default info for proxy, error otherwise)")
	completeWords(c, "log-level", "debug", "info", "warn", "error", "off")
}

// logger is the run's logger; it discards until startObservability ran.
func (a *app) logger() *slog.Logger {
	if a.obs.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.obs.log
}

// startObservability sets up logging at --log-level and, when the standard
// OTEL_* variables ask for it, the OpenTelemetry SDK with service.name
// agentctl and the exporters they name (OTLP over HTTP or gRPC, console,
// Prometheus; see go.opentelemetry.io/contrib/exporters/autoexport) as the
// global providers, which the ledger's client and server use.
func (a *app) startObservability(ctx context.Context, c *cobra.Command) error {
	level := a.obs.logLevel
	if level == "" {
		level = "error"
		if c.Name() == "proxy" {
			level = "info"
		}
	}
	switch lv, ok := logLevels[strings.ToLower(level)]; {
	case strings.EqualFold(level, "off"):
		a.obs.log = slog.New(slog.DiscardHandler)
	case ok:
		a.obs.log = slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: lv}))
	default:
		return exitf(exitUsage, "--log-level %q: want debug, info, warn, error or off", level)
	}
	log := a.obs.log
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Error("telemetry", "err", err) }))
	if a.getenv("OTEL_SDK_DISABLED") == "true" || !a.exportRequested() {
		return nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(serviceName), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK())
	if err != nil {
		return exitf(exitUsage, "OpenTelemetry resource: %v; fix OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME", err)
	}
	spans, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return exitf(exitUsage, "OpenTelemetry traces: %v; fix OTEL_TRACES_EXPORTER or the OTEL_EXPORTER_OTLP_* variables", err)
	}
	if !autoexport.IsNoneSpanExporter(spans) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		otel.SetTracerProvider(tp)
		a.obs.shutdown = append(a.obs.shutdown, tp.Shutdown)
	}
	reader, err := autoexport.NewMetricReader(ctx)
	if err != nil {
		return errors.Join(exitf(exitUsage, "OpenTelemetry metrics: %v; fix OTEL_METRICS_EXPORTER or the OTEL_EXPORTER_OTLP_* variables", err),
			a.stopObservability())
	}
	if !autoexport.IsNoneMetricReader(reader) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		otel.SetMeterProvider(mp)
		a.obs.shutdown = append(a.obs.shutdown, mp.Shutdown)
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	name, _ := res.Set().Value(semconv.ServiceNameKey)
	log.Debug("OpenTelemetry export on", "service.name", name.String(), "traces", !autoexport.IsNoneSpanExporter(spans),
		"metrics", !autoexport.IsNoneMetricReader(reader))
	return nil
}

// exportRequested reports whether any standard variable asks for export.
func (a *app) exportRequested() bool {
	for _, v := range otelExportVars {
		if a.getenv(v) != "" {
			return true
		}
	}
	return false
}

// stopObservability flushes and shuts down what startObservability
// installed, within exportTimeout.
func (a *app) stopObservability() error {
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	var errs []error
	for i := len(a.obs.shutdown) - 1; i >= 0; i-- {
		if err := a.obs.shutdown[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	a.obs.shutdown = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("exporting the last telemetry: %w", err)
	}
	return nil
}

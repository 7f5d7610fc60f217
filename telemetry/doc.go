// Package telemetry is the observability of mcpledger: the OpenTelemetry
// instruments and spans of tool calls through the ledger, W3C trace context
// carried in _meta from client to server, and the per-call events behind
// "agentctl ledger stats".
//
// It is written against the OpenTelemetry API only (no SDK, no exporter),
// so a program plugs in its own exporters by giving a MeterProvider and a
// TracerProvider to client.Options or server.Options (the global providers
// when nil). To serve Prometheus text instead, package
// telemetry/prometheus has an endpoint:
//
//	prom, err := prometheus.Serve(ctx, "127.0.0.1:9464")
//	if err != nil {
//		return err
//	}
//	defer prom.Shutdown(context.Background())
//	c := client.New(session, store, &client.Options{MeterProvider: prom.Provider})
//
// Packages client and server drive it: each call is Start-ed (a span, child
// of the caller's span or of the traceparent found in _meta) and End-ed
// with its outcome, which moves the counters, the histograms and, when the
// store is a ledger.EventLog, queues one event for the background writer.
// METRICS.md at the repository root lists every instrument with its name,
// unit, attributes and meaning.
//
// No attribute, span or event ever holds an idempotency key, an argument or
// a result; logs show keys as ledger.ShortHash.
package telemetry

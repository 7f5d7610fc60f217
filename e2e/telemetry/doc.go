// Package telemetry holds the tests of the library's telemetry package
// that read its metrics and spans through the OpenTelemetry SDK: instrument
// kinds, units, buckets, attributes and spans as the MCP semantic
// conventions name them. They live in this module, which has the SDK, so
// that the library's module leaves the SDK out of its requirements.
package telemetry

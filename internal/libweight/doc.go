// Package libweight holds no code: its test keeps the library light. A
// program that imports client, server or any ledger package must not get
// a terminal UI library, a metrics SDK or the Prometheus client; those
// live in confirm/terminal and telemetry/prometheus, imported by
// cmd/agentctl or by programs that want them.
package libweight

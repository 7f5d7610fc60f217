// Package libweight holds no code: its tests keep the library light. A
// program that imports client, server or any ledger package must not get
// a terminal UI library, a metrics SDK or the Prometheus client; those
// live in confirm/terminal and telemetry/prometheus, modules of their own
// imported by cmd/agentctl or by programs that want them. TestUserModule
// goes further and checks, in a user module of its own, what go mod tidy
// puts in a user's module graph and go.sum for client, server and mcpgo.
package libweight

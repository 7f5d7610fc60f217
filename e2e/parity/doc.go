// Package parity holds the tests that run one table of scenarios, and a
// record in each of the eight states, through every adapter of the one
// caller: package client's wrapper and middleware on go-sdk, package mcpgo
// on mcp-go, and the proxy; and one table through both adapters of the
// one server core (package guard): package server on go-sdk and package
// mcpgo's Guard on mcp-go. They live in the e2e module because they need
// mcp-go, which the library's own module does not require.
package parity

package server

import (
	"context"
	"time"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
)

// Reconcile settles an UNKNOWN operation once someone has found out what
// happened (checked the payments table, asked the downstream by its
// end-to-end key): r.Result (a *mcp.CallToolResult) is what every later
// duplicate gets back; see guard.Reconcile, which the client, the CLI and
// the console use too.
func Reconcile(ctx context.Context, store ledger.Store, id ledger.ID, r Reconciliation) (*ledger.Record, error) {
	return guard.Reconcile(ctx, store, id, guard.Reconciliation(r))
}

// Reconciliation is what someone found out about an UNKNOWN call. It has
// the fields of [guard.Reconciliation] and converts to it.
type Reconciliation struct {
	// As is ledger.StateSucceeded (found), ledger.StateFailed (the tool
	// refused it) or ledger.StateRetryable (provably not run: the next
	// call with the key runs it).
	As ledger.State
	// By and Note say who found out and how; At is when (now when zero),
	// for the text kept on the record (the ledger stamps the resolution
	// with its own clock).
	By, Note string
	At       time.Time
	// Method is how it was found out (ledger.MethodPerson when empty).
	Method ledger.Method
	// Result is what every later duplicate gets back: the tool's own
	// result as its SDK's type (a go-sdk or mcp-go CallToolResult, encoded
	// as JSON) or raw JSON. Nil stores one text result that says who
	// reconciled it and why (isError for FAILED), marked in _meta. A
	// RETRYABLE record keeps no result.
	Result any
}

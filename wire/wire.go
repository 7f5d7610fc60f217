// Package wire is the one home of the mcpledger MCP conventions (DESIGN.md,
// "Wire conventions"): the _meta keys, the capability, the error data and
// the replay marker ([Replay], [Marker]). The server error codes and their
// reasons are defined once, in package ledger ([ledger.CodeKeyReused] …),
// whose rows name them. The client, the server middleware, the proxy and
// the test servers all import these names; none defines its own.
//
//	meta := mcp.Meta{wire.MetaKey: key, wire.MetaFence: fence}
//	if errors.Is(err, &jsonrpc.Error{Code: ledger.CodeKeyReused}) { ... }
//
// A request's key and fence are read with [KeyOf] and [FenceOf], the same
// at every end. The package imports no MCP SDK, so code on any SDK can use
// it.
package wire

import (
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/compact"
)

// _meta entries and argument names.
const (
	// MetaKey carries the idempotency key in params._meta.
	MetaKey = "io.github.mcpledger/idempotency-key"
	// MetaFence carries the lease's fencing token (an integer) with the key.
	MetaFence = "io.github.mcpledger/fence"
	// MetaFenceScope names the sequence the token counts in (a short
	// string): tokens of one key compare only within one scope, because
	// two ledgers that use the same key count their own.
	MetaFenceScope = "io.github.mcpledger/fence-scope"
	// MetaReplay marks a replayed result (value: a Replay).
	MetaReplay = "io.github.mcpledger/replay"
	// MetaError is on an error result the proxy gives a host: what the
	// ledger said, {"key": the key, "state": the record's state}.
	MetaError = "io.github.mcpledger/error"
	// MetaReconciled marks a result recorded by a person's reconciliation.
	MetaReconciled = "io.github.mcpledger/reconciled"
	// MetaCompacted marks a result compacted past the size limit
	// (package compact writes it, below wire, so the name lives there).
	MetaCompacted = compact.MetaKey
	// MetaSession names the ledger session of a host's request (the proxy
	// reads it).
	MetaSession = "io.github.mcpledger/session"
	// ArgKey is the argument the client fills with the key when a tool's
	// input schema declares it (excluded from the fingerprint).
	ArgKey = "idempotency_key"
	// Capability is the experimental capability a key-aware server
	// advertises: {"version":1,"retentionSeconds":N}.
	Capability = "io.github.mcpledger/idempotency"
	// CapabilityTenants is the member of the capability's value that says
	// the server keeps keys per tenant, taken from the authenticated
	// request (true).
	CapabilityTenants = "tenants"
	// CapabilityVersion is the version this module speaks.
	CapabilityVersion = 1
)

// ErrorData is the data member of the server errors (ledger.CodeKeyReused
// and the other codes, with ledger.ReasonKeyReused and the other reasons).
type ErrorData struct {
	Reason       string `json:"reason"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	Key          string `json:"key,omitempty"`
	State        string `json:"state,omitempty"`
}

// RetryAfterMs rounds d up to whole milliseconds (0 when d is not positive).
func RetryAfterMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Fence is a fencing token with its scope.
type Fence struct {
	Token int64
	Scope string
}

// Stale reports whether f comes from an owner that lost the key to the
// owner of seen: the same scope, and a lower token.
func (f Fence) Stale(seen Fence) bool {
	return f.Scope == seen.Scope && f.Token < seen.Token
}

// Replay is the value of _meta[MetaReplay] on a replayed result, so
// runtimes and models can tell a replay from a fresh execution.
type Replay struct {
	Key      string       `json:"key"`
	State    ledger.State `json:"state"`
	FirstAt  time.Time    `json:"firstAt"`
	Attempts int          `json:"attempts"`
	// Compacted: the stored result was compacted past the size limit.
	Compacted bool `json:"compacted,omitempty"`
	// Reconciled, when set, says the outcome was not the tool's own
	// answer to the call but found out after it was UNKNOWN: how, by whom
	// and when (ledger.Record.Reconciled).
	Reconciled *Reconciled `json:"reconciled,omitempty"`
}

// Reconciled is how a replayed outcome was reconciled.
type Reconciled struct {
	Method ledger.Method `json:"method"`
	By     string        `json:"by,omitempty"`
	At     time.Time     `json:"at"`
}

// ReconciledOf is the marker's Reconciled for rec (nil when no reconciler
// settled it).
func ReconciledOf(rec *ledger.Record) *Reconciled {
	r := rec.Reconciled
	if r == nil {
		return nil
	}
	return &Reconciled{Method: r.Method, By: r.By, At: r.At.UTC()}
}

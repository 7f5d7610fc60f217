package guard

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/process"
	"github.com/mcpledger/mcpledger/wire"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// DefaultTenant is the tenant of every call whose Request names none.
const DefaultTenant = "default"

// Defaults for the zero fields of Options.
const (
	DefaultInProgressWait = 5 * time.Second
	DefaultRetryAfter     = time.Second
)

// Options configures a Guard. The zero value (or nil) keeps records in
// ledger.LayerServer with the ledger's default lease and retention. Each
// SDK adapter (package server for go-sdk, package mcpgo for mcp-go) fills
// them from its own options.
type Options struct {
	// Layer names whose records the guard keeps (default
	// ledger.LayerServer), so a client or a proxy that shares the ledger
	// keeps its own record of the same key apart.
	Layer string
	// Tools holds per-tool settings by tool name.
	Tools ledger.Tools

	// InProgressWait bounds how long a duplicate waits for the execution it
	// duplicates before it gets -31002 in_progress (DefaultInProgressWait
	// when zero).
	InProgressWait time.Duration
	// RetryAfter is the retryAfterMs advice sent with -31002
	// (DefaultRetryAfter when zero).
	RetryAfter time.Duration
	// Lease is the PROCESSING lease of a running handler, renewed every
	// Lease/3 while it runs (ledger.DefaultLease when zero).
	Lease time.Duration
	// Retention is how long results are kept for replay
	// (ledger.DefaultRetention when zero); per tool in ledger.ToolSettings.
	Retention time.Duration
	// SweepEvery is the period of Run (Lease/4 when zero, at least 100ms).
	SweepEvery time.Duration
	// SweepLimit is the most records one sweep purges
	// (ledger.DefaultSweepLimit when zero).
	SweepLimit int
	// MaxResult is the stored size past which a result is compacted
	// (ledger.DefaultMaxResult when zero).
	MaxResult int

	// Owner names this process in leases (NewOwner("server") when empty).
	Owner string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Logger receives one line per stored outcome and every ledger error
	// (slog.Default when nil). Keys appear as ledger.ShortHash.
	Logger *slog.Logger

	// MeterProvider and TracerProvider receive the metrics and spans of
	// every guarded call (the global OpenTelemetry providers when nil).
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider

	// Reconcilers holds a Reconciler per tool name: when a call meets an
	// UNKNOWN record of its key, and in every sweep for the UNKNOWN
	// records due, the tool's reconciler looks the key up in the server's
	// own data and its finding settles the record (ledger.Resolve).
	Reconcilers map[string]Reconciler
	// ReconcileBudget bounds one reconciler call (DefaultReconcileBudget
	// when zero), so a call that meets an UNKNOWN record gets its answer
	// in the same turn.
	ReconcileBudget time.Duration
}

// withDefaults returns a copy of o with every zero field filled.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Layer == "" {
		c.Layer = ledger.LayerServer
	}
	if c.InProgressWait <= 0 {
		c.InProgressWait = DefaultInProgressWait
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.Lease <= 0 {
		c.Lease = ledger.DefaultLease
	}
	if c.Retention <= 0 {
		c.Retention = ledger.DefaultRetention
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = max(c.Lease/4, 100*time.Millisecond)
	}
	if c.SweepLimit <= 0 {
		c.SweepLimit = ledger.DefaultSweepLimit
	}
	if c.MaxResult <= 0 {
		c.MaxResult = ledger.DefaultMaxResult
	}
	if c.ReconcileBudget <= 0 {
		c.ReconcileBudget = DefaultReconcileBudget
	}
	if c.Owner == "" {
		c.Owner = NewOwner("server")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// NewOwner is a lease owner for a server process: process.NewOwner with
// label and a random suffix, unique per process, so a restarted process
// never mistakes a dead predecessor's lease for its own, and a duplicate
// on this host knows at once when the process that held a call is gone.
func NewOwner(label string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms.
		panic("guard: reading random bytes: " + err.Error())
	}
	return process.NewOwner(label + "-" + hex.EncodeToString(b[:]))
}

// Capability is the value of the experimental capability a key-aware
// server advertises (wire.Capability): {"version": 1,
// "retentionSeconds": N}, and "tenants": true when the server keeps keys
// per tenant taken from the authenticated request, so a client need not
// make its tenants' keys distinct itself.
func Capability(retention time.Duration, tenants bool) map[string]any {
	v := map[string]any{"version": wire.CapabilityVersion, "retentionSeconds": int64(retention / time.Second)}
	if tenants {
		v[wire.CapabilityTenants] = true
	}
	return v
}

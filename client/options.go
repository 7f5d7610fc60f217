package client

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/telemetry"
)

// Options configure a Client or a Middleware. The zero value (or nil)
// means the defaults. They have the fields of [caller.Options], in its
// order, and convert to it: the compiler keeps the two the same.
type Options struct {
	// Tenant scopes every record (default "default").
	Tenant string
	// Layer names whose records these are (default ledger.LayerClient):
	// a proxy's client keeps ledger.LayerProxy, so an agent, a proxy and
	// a server guard that share one ledger each keep their own.
	Layer string
	// Session is the agent session the re-planning guard and "approve for
	// this session" are scoped to (default: a random id per Client).
	Session string
	// Owner names this process in leases (default process.NewOwner, which
	// lets a follower on this host see at once that the process is gone).
	Owner string
	// Retry is the backoff policy for transient and retryable failures.
	Retry *retry.Policy
	// Window is the re-planning window (default 10 minutes); Tools
	// overrides it per tool.
	Window time.Duration
	// Tools holds the per-tool settings: re-planning window, retention,
	// reuse policy, fingerprint exclusions, redaction, compaction, and the
	// trusted configuration that a tool is idempotent (ambiguous failures
	// may be re-sent) or read-only (it bypasses the ledger).
	Tools ledger.Tools
	// Policy decides allow / ask / deny / queue (default confirm.Default()).
	Policy *confirm.Policy
	// Confirmer asks a person. Nil means no one can be asked: a call the
	// policy says to ask about is rejected (fail closed), or queued when
	// the policy says whenNoOneCanBeAsked: queue.
	Confirmer confirm.Confirmer
	// Requester names who makes the calls, on queued approvals (a policy
	// may require the approver to be someone else); default "session:"
	// and the session id.
	Requester string
	// Server labels the upstream for the policy and prompts (default the
	// server's implementation name).
	Server string
	// TrustedServer makes the server's tool annotations count (readOnlyHint
	// bypasses the ledger, so a repeated read reads again; idempotentHint
	// allows ambiguous retries). A server the policy's trusted list names
	// is trusted too.
	TrustedServer bool
	// Retention of records (default 24h); Tools overrides it per tool.
	Retention time.Duration
	// Lease of a PROCESSING record (default 30s), renewed while the call runs.
	Lease time.Duration
	// InProgressWait bounds how long a follower waits for another caller's
	// execution before ErrInProgress (default 30s: a tool call may take that
	// long, and the wait holds only the caller's own context; a server
	// guard answers a duplicate sooner, see server.Options.InProgressWait).
	InProgressWait time.Duration
	// AttemptTimeout bounds one attempt (default none: the caller's ctx).
	AttemptTimeout time.Duration
	// ChildProcess says the server is a child process that the adapter's
	// connect function starts and speaks to over stdio (go-sdk's
	// CommandTransport): once a session has been closed, its process has
	// exited, and nothing sent on it can still take effect. A probe's
	// absent answer about a call sent on such a session is then believed
	// at once, without waiting for the quiet period.
	ChildProcess bool
	// ProbeBudget bounds the probe a call runs when it meets an UNKNOWN
	// record of its key and the policy names a probe for the tool
	// (DefaultProbeBudget when zero; the call's own deadline when sooner).
	ProbeBudget time.Duration
	// MaxArguments is the largest accepted argument JSON (default 1 MiB).
	MaxArguments int
	// MaxResult is the size past which a stored result is compacted
	// (default ledger.DefaultMaxResult).
	MaxResult int
	// Durability is when the ledger's writes reach the disk: every one
	// before it returns (ledger.Durable, the default), or claims durable
	// and each call's outcome written behind (ledger.WriteBehind): the
	// outcome is visible to every process at once and on disk with the
	// store's next durable write or within its short window, which spares
	// one fsync per call. A machine crash inside that window leaves the
	// record PROCESSING under a dead owner, so it becomes UNKNOWN and
	// waits for reconciliation; the call is never executed twice. Stores
	// that do not know the setting write durably.
	Durability ledger.Durability
	// Logger receives the client's logs (none when nil); keys appear as
	// short hashes.
	Logger *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// MeterProvider and TracerProvider receive the metrics and spans of
	// every call (the global OpenTelemetry providers when nil); see
	// package telemetry. When the store is a ledger.EventLog, each call
	// also leaves an event there, written in the background.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// Peer is where the server is, for those spans and metrics
	// (network.transport, server.address, server.port): a session hides
	// its transport, so whoever opens it says (telemetry.PeerOfURL,
	// telemetry.PeerOfStdio). The zero value reports none.
	Peer telemetry.Peer
	// Telemetry, when set, receives the metrics, spans and events of the
	// calls instead of one the Client makes for itself (MeterProvider and
	// TracerProvider are then unused): many clients of one process (a
	// proxy's, one per host session) share one event writer, one set of
	// metric attributes per tool and one UNKNOWN gauge. Make it with
	// NewTelemetry; the Client never closes it.
	Telemetry *telemetry.Telemetry
	// Finals, when set, is where the Client remembers the finished records
	// it sees, shared with the other clients over the same store (nil: a
	// memory of its own). See caller.Finals.
	Finals *caller.Finals
}

// core is o as package caller takes it (nil for nil: the defaults).
func (o *Options) core() *caller.Options {
	if o == nil {
		return nil
	}
	co := caller.Options(*o)
	return &co
}

// NewTelemetry is the telemetry a Client with opts over store would make
// for itself, for Options.Telemetry: one for many clients of a process
// (caller.NewTelemetry). Close it after the last of them.
func NewTelemetry(store ledger.Store, opts *Options) *telemetry.Telemetry {
	return caller.NewTelemetry(store, opts.core())
}

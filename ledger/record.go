package ledger

import (
	"encoding/json"
	"strconv"
	"time"
)

// ID is the unique identity of an operation. Stores enforce it with a
// unique constraint.
type ID struct {
	Tenant string `json:"tenant"`
	// Layer says whose record it is (LayerClient, LayerProxy,
	// LayerServer): a client, a proxy and a server guard that share one
	// ledger each keep their own record of one key.
	Layer string `json:"layer"`
	Tool  string `json:"tool"`
	Key   string `json:"key"`
}

// Validate checks the tenant, layer and key rules and that a tool is
// named.
func (id ID) Validate() error {
	if err := ValidateTenant(id.Tenant); err != nil {
		return err
	}
	if err := ValidateLayer(id.Layer); err != nil {
		return err
	}
	if id.Tool == "" {
		return errEmptyTool
	}
	return ValidateKey(id.Key)
}

// ReusePolicy says what a reuse of a key after its record expired means.
type ReusePolicy string

const (
	// Reexecute (the default): after retention the key is free and a reuse
	// is a new operation.
	Reexecute ReusePolicy = "reexecute"
	// Verify: purge keeps a tombstone (key and fingerprint) and a reuse is
	// treated like UNKNOWN: a person decides.
	Verify ReusePolicy = "verify"
)

// Lease is what an owner holds on a PROCESSING or PENDING_APPROVAL record:
// its writes are conditional on Owner and Fence.
type Lease struct {
	ID
	Owner string
	Fence int64
	// Scope names the sequence Fence counts in: the key's record in this
	// ledger, from its first claim. Another ledger that uses the same key
	// counts fences of its own, so fences compare only within one scope.
	Scope string
}

// LeaseOf returns the lease r's owner holds.
func LeaseOf(r *Record) Lease {
	return Lease{ID: r.ID, Owner: r.Owner, Fence: r.Fence, Scope: FenceScope(r)}
}

// FenceScope is the scope of r's fences (see Lease.Scope): its first
// claim's time, to the millisecond, which every process sharing the ledger
// reads alike and which a take-over keeps.
func FenceScope(r *Record) string {
	return strconv.FormatInt(r.CreatedAt.UnixMilli(), 36)
}

// Approval is a person's (or a policy's) decision on a PENDING_APPROVAL record.
type Approval struct {
	Decision string    `json:"decision"` // "approved", "approved_session" or "denied"
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Reason   string    `json:"reason,omitempty"`
	// What a queued or standing approval is bound to: the arguments'
	// fingerprint, the version of the policy it was asked under, when it
	// lapses, and who made the call (a policy may require By to differ).
	Fingerprint   string    `json:"fingerprint,omitempty"`
	PolicyVersion string    `json:"policyVersion,omitempty"`
	Expires       time.Time `json:"expires,omitzero"`
	Requester     string    `json:"requester,omitempty"`
}

// Approval decisions.
const (
	DecisionApproved        = "approved"
	DecisionApprovedSession = "approved_session"
	DecisionDenied          = "denied"
)

// Record is everything the ledger keeps about one operation.
type Record struct {
	ID
	Session     string          `json:"session,omitempty"`
	Fingerprint string          `json:"fingerprint"`
	Arguments   json.RawMessage `json:"arguments,omitempty"` // redacted
	State       State           `json:"state"`
	Attempts    int             `json:"attempts"`
	// Result is the full CallToolResult JSON, byte for byte as first
	// returned (after compaction when Compacted is set).
	Result       json.RawMessage `json:"result,omitempty"`
	Compacted    bool            `json:"compacted,omitempty"`
	ErrorKind    string          `json:"errorKind,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	// Owner is the process holding the lease (see Owner and ParseOwner);
	// Fence grows at every claim and take-over of the key, and every write
	// by an owner is conditional on it, so a stale owner changes nothing.
	Owner       string      `json:"owner,omitempty"`
	Fence       int64       `json:"fence,omitempty"`
	LeaseUntil  time.Time   `json:"leaseUntil,omitzero"`
	Approval    *Approval   `json:"approval,omitempty"`
	TraceID     string      `json:"traceId,omitempty"`
	SpanID      string      `json:"spanId,omitempty"`
	ReusePolicy ReusePolicy `json:"reusePolicy,omitempty"`
	// Tombstone: retention ended under the Verify policy; only the identity
	// and fingerprint remain.
	Tombstone bool      `json:"tombstone,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Defaults used when a request leaves a duration zero.
const (
	DefaultLease     = 30 * time.Second
	DefaultRetention = 24 * time.Hour
	// DefaultMaxResult is the size past which a result is compacted.
	DefaultMaxResult = 4 << 20
)

package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/ledger/compact"
	"github.com/mcpledger/mcpledger/ledger/redact"
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
	Decision string `json:"decision"` // "approved", "approved_session" or "denied"
	// By is who decided: a verified identity (the OS account, found by
	// uid, at the terminal and for agentctl; the name of the approver's
	// own token in the console), "policy" for the policy's own answer.
	By string `json:"by"`
	// Via is where the decision was given: "terminal", "agentctl",
	// "console", "elicitation", or "standing" for a call that a standing
	// approval (approve for this session) let through.
	Via    string    `json:"via,omitempty"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// What a queued or standing approval is bound to: the arguments'
	// fingerprint, the version of the policy it was asked under, when it
	// lapses, and who made the call (a policy may require By to differ).
	Fingerprint   string    `json:"fingerprint,omitempty"`
	PolicyVersion string    `json:"policyVersion,omitempty"`
	Expires       time.Time `json:"expires,omitzero"`
	Requester     string    `json:"requester,omitempty"`
	// Standing names the standing approval that let this call through
	// (Via "standing"): the call it was given on and when. By, Expires
	// and PolicyVersion are that approval's.
	Standing *Standing `json:"standing,omitempty"`
}

// Standing refers to a standing approval ("approve for this session",
// DecisionApprovedSession) from a call it let through: the record that
// carries it (same tenant), where and when it was given.
type Standing struct {
	Layer   string    `json:"layer,omitempty"`
	Tool    string    `json:"tool"`
	Key     string    `json:"key"`
	Session string    `json:"session,omitempty"`
	Via     string    `json:"via,omitempty"`
	Given   time.Time `json:"given"`
}

// ViaStanding is the Via of an approval that a standing approval gave.
const ViaStanding = "standing"

// StandingFrom is the approval a call (record rec) gets from the standing
// approval on src, at now: approved once, by whoever gave the standing
// approval, bound to rec's fingerprint and to the standing approval's
// policy version and expiry, with a reference to src. Requester is src's;
// the caller sets the requester of rec's call.
func StandingFrom(src, rec *Record, now time.Time) *Approval {
	ap := src.Approval
	return &Approval{
		Decision: DecisionApproved, By: ap.By, Via: ViaStanding, At: now.UTC(), Reason: ap.Reason,
		Fingerprint: rec.Fingerprint, PolicyVersion: ap.PolicyVersion, Expires: ap.Expires, Requester: ap.Requester,
		Standing: &Standing{Layer: src.Layer, Tool: src.Tool, Key: src.Key, Session: src.Session, Via: ap.Via, Given: ap.At},
	}
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
	// Owner is the process holding the lease (see package process);
	// Fence grows at every claim and take-over of the key, and every write
	// by an owner is conditional on it, so a stale owner changes nothing.
	Owner       string      `json:"owner,omitempty"`
	Fence       int64       `json:"fence,omitempty"`
	LeaseUntil  time.Time   `json:"leaseUntil,omitzero"`
	Approval    *Approval   `json:"approval,omitempty"`
	TraceID     string      `json:"traceId,omitempty"`
	SpanID      string      `json:"spanId,omitempty"`
	ReusePolicy ReusePolicy `json:"reusePolicy,omitempty"`
	// Reconciled says how an UNKNOWN record was settled (Resolve): the
	// finding that settled it, whose method, author, time and evidence it
	// keeps. Nil for a record no reconciler settled; a new run of the key
	// (a claim of a RETRYABLE record, a replacement) clears it.
	Reconciled *Resolution `json:"reconciled,omitempty"`
	// Findings is the record's reconciliation history, oldest first: every
	// finding recorded on it, inconclusive ones included, at most the last
	// MaxFindings of them. FindingCount counts every finding ever recorded.
	Findings     []Resolution `json:"findings,omitempty"`
	FindingCount int          `json:"findingCount,omitempty"`
	// ReconcileAt is when the next background reconciliation of an UNKNOWN
	// record is due (zero: at once). An inconclusive finding sets it, later
	// at each consecutive one (ReconcileDelay).
	ReconcileAt time.Time `json:"reconcileAt,omitzero"`
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
	DefaultMaxResult = compact.DefaultLimit
)

// Text describes the approval in one line for people: the decision, who
// gave it and where, when, the reason, and what it is bound to (a
// standing approval's record, the policy version, the expiry).
func (a *Approval) Text() string {
	if a == nil {
		return ""
	}
	by := a.By
	if by == "" {
		by = "-"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s by %s", a.Decision, by)
	if a.Via != "" && a.Via != ViaStanding {
		fmt.Fprintf(&b, " (%s)", a.Via)
	}
	if !a.At.IsZero() {
		fmt.Fprintf(&b, " at %s", a.At.UTC().Format(time.RFC3339))
	}
	if a.Reason != "" {
		fmt.Fprintf(&b, ": %s", a.Reason)
	}
	if s := a.Standing; s != nil {
		fmt.Fprintf(&b, "; by the standing approval given on %s key %s", s.Tool, s.Key)
		if s.Via != "" {
			fmt.Fprintf(&b, " (%s)", s.Via)
		}
		fmt.Fprintf(&b, " at %s", s.Given.UTC().Format(time.RFC3339))
		if s.Session != "" {
			fmt.Fprintf(&b, " for session %s", s.Session)
		}
	}
	if a.Decision == DecisionApprovedSession || a.Standing != nil {
		if !a.Expires.IsZero() {
			fmt.Fprintf(&b, ", standing until %s", a.Expires.UTC().Format(time.RFC3339))
		}
	} else if !a.Expires.IsZero() {
		fmt.Fprintf(&b, "; valid until %s", a.Expires.UTC().Format(time.RFC3339))
	}
	if a.PolicyVersion != "" {
		fmt.Fprintf(&b, "; policy %s", a.PolicyVersion)
	}
	if a.Requester != "" {
		fmt.Fprintf(&b, "; requested by %s", a.Requester)
	}
	return b.String()
}

// RedactRecord redacts r in place for a person to read (agentctl ledger
// show and list, the web console): its arguments and result as redact.JSON does
// (a result is the tool's answer, kept whole for replays, so it may echo an
// API key), and its error message and approval reason, free text a person
// or a tool wrote, as redact.Text does. A payload that is not JSON (none
// is, from this module) is hidden whole. Call it on a copy the caller
// owns: the stored record is never written back redacted, and the
// approval is replaced by a redacted copy, not changed.
func RedactRecord(r *Record) {
	r.Arguments = redactShown(r.Arguments)
	r.Result = redactShown(r.Result)
	r.ErrorMessage = redact.Text(r.ErrorMessage)
	if a := r.Approval; a != nil && a.Reason != "" {
		c := *a
		c.Reason = redact.Text(a.Reason)
		r.Approval = &c
	}
}

func redactShown(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return p
	}
	red, err := redact.JSON(p)
	if err != nil {
		return json.RawMessage(`"` + redact.Placeholder + `"`)
	}
	return red
}

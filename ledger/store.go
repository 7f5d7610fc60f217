package ledger

import (
	"context"
	"encoding/json"
	"time"
)

// Store keeps records. Every implementation passes ledgertest.Run.
//
// All reads and writes are scoped by tenant: no method returns a record of a
// tenant other than the one it was asked about. Records of one tenant,
// tool and key in different layers are different records (ID.Layer). Every time a Store writes or
// compares (leases, retention, created/updated) comes from its own clock, so
// tests can inject one.
type Store interface {
	// Claim atomically creates the record for req.ID, owned by req.Owner
	// under a lease, in PROCESSING or, when req.NeedsApproval,
	// PENDING_APPROVAL, and reports Won. When a record already exists the
	// caller is a follower and gets it with Won false, except that:
	//   - a different fingerprint returns the stored record and an error
	//     wrapping ErrKeyReused; the record is untouched (Claimable);
	//   - a RETRYABLE record with the same fingerprint is taken over (new
	//     owner, Won true), keeping Attempts and CreatedAt;
	//   - a REJECTED record is claimed as a new operation whatever its
	//     fingerprint (Won true), keeping Attempts and CreatedAt;
	//   - a settled record (State.Settled) at or past ExpiresAt that is not
	//     a tombstone is replaced by a new operation (Won true, whatever its
	//     fingerprint, Attempts 0), which is the Reexecute policy.
	// Every claim that wins sets Fence to one more than the key's last
	// fence (1 for a new key), so fences of one key only grow.
	// Claim never checks and then inserts: the unique constraint decides.
	Claim(ctx context.Context, req ClaimRequest) (Claim, error)

	// Transition moves a record from t.From to t.To with compare-and-set. An
	// edge missing from the state table fails with ErrIllegalTransition
	// before storage is touched. When t.From is leased (PROCESSING or
	// PENDING_APPROVAL) the record must still be in t.From, owned by t.Owner
	// with fence t.Fence, else ErrLeaseLost. When t.From is UNKNOWN and
	// t.Fence is not zero, the record's fence must still be t.Fence (the
	// late result of the owner whose lease ended, or a reconciler's finding
	// (Resolve)), else ErrLeaseLost. With t.Finding set, the record must
	// also still have t.Finding.Count findings, else ErrStateChanged; the
	// store writes the finding's history, resolution or due time with its
	// own clock (FindingWrite.Encode), and an inconclusive finding (UNKNOWN
	// -> UNKNOWN) keeps UpdatedAt. Any other mismatch of the current state
	// fails with ErrStateChanged; a failed Transition changes nothing.
	// UNKNOWN -> PROCESSING (a re-send) is a take-over: the record gets
	// t.Owner and Fence+1. PENDING_APPROVAL -> PROCESSING keeps the fence,
	// unless t.NewOwner is set: from a leased state, t.NewOwner takes the
	// record over (it becomes the owner, with Fence+1) once t.Owner and
	// t.Fence matched; that is how a queued approval is recorded
	// (PENDING_APPROVAL -> PENDING_APPROVAL) and consumed (-> PROCESSING).
	// An empty t.Result, empty t.ErrorKind and t.ErrorMessage, or nil
	// t.Approval keep the stored values; entering PROCESSING clears the
	// error. LeaseUntil is set only while the record is leased.
	Transition(ctx context.Context, t Transition) (*Record, error)

	// Renew extends the lease l (PROCESSING or PENDING_APPROVAL, owner and
	// fence) to now+d, or fails with ErrLeaseLost.
	Renew(ctx context.Context, l Lease, d time.Duration) error

	// Get returns the record or ErrNotFound.
	Get(ctx context.Context, id ID) (*Record, error)

	// FindRecent returns the records of (tenant, layer, session, tool,
	// fingerprint) created at or after q.Since, newest first.
	FindRecent(ctx context.Context, q RecentQuery) ([]*Record, error)

	// List returns one page of a tenant's records, newest first, with a
	// cursor for the next page ("" when there is none). The order is stable:
	// (CreatedAt, Tool, Key, Layer) descending.
	List(ctx context.Context, f Filter) (Page, error)

	// Wait blocks until the record is no longer leased (PROCESSING or
	// PENDING_APPROVAL) and returns it. When ctx ends first it returns the
	// latest record it saw and ctx's error.
	Wait(ctx context.Context, id ID) (*Record, error)

	// ExpireLeases ends every lease that has run out (LeaseUntil at or
	// before now): a PROCESSING record becomes UNKNOWN (ErrorKind
	// KindLeaseExpired), a PENDING_APPROVAL record REJECTED (ErrorKind
	// KindApprovalExpired; nothing ran). It returns how many it changed.
	ExpireLeases(ctx context.Context) (int, error)

	// Purge removes settled records (SUCCEEDED, FAILED, DENIED, RETRYABLE,
	// REJECTED)
	// whose ExpiresAt is at or before p.ExpiredBy, or, when p.UpdatedBefore
	// is set, whose UpdatedAt is before it. A record under the Verify policy
	// becomes a tombstone instead; a tombstone that matches again is
	// deleted. A tombstone keeps only identity, state and fingerprint, and
	// lives one more retention period (ExpiresAt-CreatedAt) from now.
	// UNKNOWN, PROCESSING and PENDING_APPROVAL are never purged. Purge
	// returns how many records it deleted or turned into tombstones.
	Purge(ctx context.Context, p PurgeRequest) (int, error)

	// Close releases the store's resources.
	Close() error
}

// ClaimRequest asks to become the executor of one operation.
type ClaimRequest struct {
	ID
	Session     string
	Fingerprint string
	// Arguments are stored as given; callers pass them through Redact.
	Arguments json.RawMessage
	// Owner leases the record, in PROCESSING and in PENDING_APPROVAL alike
	// (see process.NewOwner).
	Owner string
	// Lease is the lease's length (DefaultLease when zero).
	Lease time.Duration
	// NeedsApproval creates PENDING_APPROVAL instead of PROCESSING.
	NeedsApproval bool
	// Retention sets ExpiresAt = now + Retention (DefaultRetention when zero).
	Retention   time.Duration
	ReusePolicy ReusePolicy // Reexecute when empty
	TraceID     string
	SpanID      string
}

// Claim is the outcome of Store.Claim.
type Claim struct {
	Record *Record
	// Won reports that the caller owns the operation and must execute it
	// (or ask for approval when the record is PENDING_APPROVAL).
	Won bool
}

// Transition is a compare-and-set state change.
type Transition struct {
	ID
	From State
	To   State
	// Owner and Fence must hold the lease when From is leased; Owner
	// becomes the new owner when To is PROCESSING. Fence also guards a
	// late result from UNKNOWN (see Store.Transition).
	Owner string
	Fence int64
	// NewOwner, when set, takes the record over from Owner: it becomes the
	// owner with Fence+1 (see Store.Transition).
	NewOwner string
	// Lease for a leased To (DefaultLease when zero).
	Lease        time.Duration
	Result       json.RawMessage
	Compacted    bool
	ErrorKind    string
	ErrorMessage string
	Approval     *Approval
	// AddAttempts is added to the record's attempt count.
	AddAttempts int
	// Finding, when set, records a reconciler's finding with the transition
	// (Resolve): the record's history, its resolution or the time its next
	// reconciliation is due, by compare-and-set on its FindingCount too.
	Finding *FindingWrite
}

// RecentQuery selects the records a re-planned call may duplicate.
type RecentQuery struct {
	Tenant      string
	Layer       string // exactly this layer, the empty one included
	Session     string
	Tool        string
	Fingerprint string
	Since       time.Time
}

// Filter selects records for List. Tenant is required; empty fields match
// everything.
type Filter struct {
	Tenant  string
	Layer   string
	Session string
	Tool    string
	// Key, when set, selects the records with this key (of any layer and
	// tool unless those are set too): a lookup by the key alone, which an
	// index serves however large the ledger.
	Key    string
	State  State
	Since  time.Time // CreatedAt >= Since when set
	Limit  int       // 50 when zero, at most 1000
	Cursor string    // from Page.Next
}

// Page is one page of List.
type Page struct {
	Records []*Record
	Next    string
}

// PurgeRequest selects records for Purge.
type PurgeRequest struct {
	ExpiredBy     time.Time
	UpdatedBefore time.Time
	// Tenant, when set, limits the purge to that tenant's records (agentctl
	// verify checks retention in a scratch tenant without touching anyone
	// else's); empty means every tenant.
	Tenant string
	// Limit, when positive, bounds one Purge to that many records (deleted
	// or made tombstones), so a periodic sweep does bounded work however
	// far behind it is; what is left waits for the next sweep. Zero purges
	// everything that matches. Either way a Store deletes in batches of its
	// own, each a short transaction, so a large purge never holds the
	// ledger's write lock for long.
	Limit int
}

// DefaultSweepLimit is the most records one periodic sweep (the server
// guard's Run, the proxy's) purges: at one sweep a minute, a sustained
// 10,000 calls a minute (about 166 a second) past their retention.
const DefaultSweepLimit = 10000

// PurgePreviewer is the optional part of a Store that says what a Purge
// would remove without removing anything (agentctl ledger purge
// --dry-run). Callers find it with a type assertion on Unwrap(store).
type PurgePreviewer interface {
	// PurgePreview counts the records Purge(ctx, p) would delete or make
	// tombstones of now, ignoring p.Limit.
	PurgePreview(ctx context.Context, p PurgeRequest) (PurgePreview, error)
}

// PurgePreview is what a Purge would remove.
type PurgePreview struct {
	// ByState counts the records per state; states with none are absent.
	ByState map[State]int
	// Oldest and Newest are the creation times of the oldest and newest
	// of them (zero when there are none).
	Oldest, Newest time.Time
}

// Total is the number of records the preview counts.
func (p PurgePreview) Total() int {
	n := 0
	for _, c := range p.ByState {
		n += c
	}
	return n
}

// TenantEraser is the optional part of a Store that removes every record
// and event of one tenant, in any state. It exists for scratch tenants
// (agentctl verify makes one per run and removes it afterwards); it is not
// retention, which Purge keeps. Callers find it with a type assertion on
// Unwrap(store).
type TenantEraser interface {
	// EraseTenant deletes tenant's records and events and reports how many
	// records it deleted. Other tenants' rows are never touched.
	EraseTenant(ctx context.Context, tenant string) (int, error)
}

// Vacuumer is the optional part of a Store that gives the space of
// purged records back to the disk (agentctl ledger vacuum). Callers find
// it with a type assertion on Unwrap(store).
type Vacuumer interface {
	// Vacuum rewrites the store's file without its free space. It holds
	// the store's write lock while it runs.
	Vacuum(ctx context.Context) (Vacuumed, error)
}

// Vacuumed is the size of a store's file, in bytes, before and after a
// Vacuum.
type Vacuumed struct {
	Before, After int64
}

// MemoryReleaser is the optional part of a Store that gives back what it
// keeps only for speed while busy (page caches, idle connections), for a
// long-running process to call once a burst of calls is over. The next
// call rebuilds what it needs. Callers find it with a type assertion on
// Unwrap(store).
type MemoryReleaser interface {
	// ReleaseMemory frees what the store can rebuild; it changes no
	// record and never waits for more than the one write in progress.
	ReleaseMemory(ctx context.Context) error
}

// Error kinds stored on records by the ledger and the lifecycle.
const (
	// KindLeaseExpired: UNKNOWN, the owner's lease ended mid-call.
	KindLeaseExpired = "lease_expired"
	// KindOwnerDead: UNKNOWN (or REJECTED from PENDING_APPROVAL), the
	// owner's process is gone.
	KindOwnerDead = "owner_dead"
	// KindApprovalExpired: REJECTED, no one approved before the lease ended.
	KindApprovalExpired = "approval_expired"
	// KindRefused: REJECTED, the server refused the arguments before the
	// tool ran.
	KindRefused = "refused"
	// KindNoAnswer: REJECTED, no one could be asked or the prompt was
	// aborted.
	KindNoAnswer = "no_answer"
)

// Durability says when a store's writes reach the disk.
type Durability int

const (
	// Durable (the default): every write is on disk before it returns.
	Durable Durability = iota
	// WriteBehind keeps claims and every other write durable, but lets a
	// run's outcome (PROCESSING -> SUCCEEDED or FAILED) return once other
	// processes can read it, before it is on disk: it becomes durable with
	// the store's next durable write or within the store's short bound.
	// A machine crash (power loss, kernel panic) or a database server's
	// crash inside that window loses the outcome, never the claim (a crash
	// of the calling process loses nothing): the record is
	// PROCESSING again under a lease no one renews (its owner is dead or
	// done), so it becomes UNKNOWN and waits for reconciliation. The call
	// is never executed a second time.
	WriteBehind
)

type durabilityKey struct{}

// WithDurability asks the stores that write under ctx for d.
func WithDurability(ctx context.Context, d Durability) context.Context {
	return context.WithValue(ctx, durabilityKey{}, d)
}

// DurabilityOf is the durability ctx asks for (Durable when unset).
func DurabilityOf(ctx context.Context) Durability {
	d, _ := ctx.Value(durabilityKey{}).(Durability)
	return d
}

// Deferrable reports whether t may be written behind under d: only a
// run's outcome, the one write whose loss leaves a record a crash would
// have left anyway.
func Deferrable(d Durability, t Transition) bool {
	return d == WriteBehind && t.From == StateProcessing && (t.To == StateSucceeded || t.To == StateFailed)
}

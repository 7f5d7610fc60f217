package planner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// DefaultWindow is how long after a call an identical one counts as a
// re-plan of it.
const DefaultWindow = 10 * time.Minute

// Decision is what the Guard concluded about a call.
type Decision int

// The decisions, one per way an earlier identical call can stand.
const (
	// Run: no earlier call matches (or the match never ran: RETRYABLE or
	// REJECTED, and the Verdict's Record carries the key to reuse): execute.
	Run Decision = iota
	// Replay: an earlier call finished (SUCCEEDED or FAILED); its recorded
	// result is the answer.
	Replay
	// InFlight: an earlier call is executing or waiting for approval.
	InFlight
	// Unknown: an earlier call may or may not have taken effect; a person
	// must reconcile it before anything is sent again.
	Unknown
	// Denied: an earlier identical call was refused.
	Denied
)

var decisionNames = [...]string{"run", "replay", "in_flight", "unknown", "denied"}

func (d Decision) String() string {
	if d < 0 || int(d) >= len(decisionNames) {
		return fmt.Sprintf("Decision(%d)", int(d))
	}
	return decisionNames[d]
}

// Query names a call that came without an explicit key.
type Query struct {
	Tenant      string
	Layer       string // the caller's layer (ledger.LayerClient, ...)
	Session     string
	Tool        string
	Fingerprint string
}

// Verdict is the Guard's answer. Record is the newest matching record; it is
// nil only when Decision is Run and nothing matched.
type Verdict struct {
	Decision Decision
	Record   *ledger.Record
}

// Guard recognizes a re-planned call. Store is required; the other fields
// have working zero values.
type Guard struct {
	Store ledger.Store
	// Window is how far back a match counts (DefaultWindow when zero). A
	// negative Window turns the guard off: every call is Run.
	Window time.Duration
	// Tools overrides Window per tool name (ToolSettings.Window: zero
	// keeps Window, negative turns the guard off for that tool).
	Tools ledger.Tools
	// Now is the clock (time.Now when nil). Give the Store the same clock.
	Now func() time.Time
}

var errNoStore = errors.New("planner: guard has no store")

// window returns the window for tool and whether the guard applies.
func (g *Guard) window(tool string) (time.Duration, bool) {
	if w := g.Tools.For(tool).Window; w != 0 {
		return w, w > 0
	}
	switch {
	case g.Window == 0:
		return DefaultWindow, true
	case g.Window < 0:
		return 0, false
	}
	return g.Window, true
}

func (g *Guard) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Check looks for calls of q's tool with q's fingerprint in q's tenant and
// session, created inside the tool's window, and decides from the newest.
// A record past its retention is no match (its key is free again under the
// reexecute policy), except a tombstone of the verify policy, which is
// Unknown: a person decides whether the old call still counts.
func (g *Guard) Check(ctx context.Context, q Query) (Verdict, error) {
	if g.Store == nil {
		return Verdict{}, errNoStore
	}
	if err := ledger.ValidateTenant(q.Tenant); err != nil {
		return Verdict{}, fmt.Errorf("planner: check: %w", err)
	}
	if q.Tool == "" || q.Fingerprint == "" {
		return Verdict{}, fmt.Errorf("planner: check: tool and fingerprint are required")
	}
	w, on := g.window(q.Tool)
	if !on {
		return Verdict{Decision: Run}, nil
	}
	now := g.now()
	recs, err := g.Store.FindRecent(ctx, ledger.RecentQuery{
		Tenant:      q.Tenant,
		Layer:       q.Layer,
		Session:     q.Session,
		Tool:        q.Tool,
		Fingerprint: q.Fingerprint,
		Since:       now.Add(-w),
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("planner: check: %w", err)
	}
	for _, r := range recs {
		// The Store promises this; checking again keeps a faulty Store
		// from handing one tenant's or session's result to another.
		if r.Tenant != q.Tenant || r.Layer != q.Layer || r.Session != q.Session || r.Tool != q.Tool || r.Fingerprint != q.Fingerprint {
			continue
		}
		if !r.Tombstone && !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
			continue
		}
		return Verdict{Decision: decide(r), Record: r}, nil
	}
	return Verdict{Decision: Run}, nil
}

// decide maps the table's action for r to the guard's decision.
func decide(r *ledger.Record) Decision {
	switch ledger.Act(r) {
	case ledger.ActReplay:
		return Replay
	case ledger.ActWait:
		return InFlight
	case ledger.ActDenied:
		return Denied
	case ledger.ActReclaim:
		// Nothing ran: send it again, under the same key.
		return Run
	}
	return Unknown
}

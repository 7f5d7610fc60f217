package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// EventLog is the optional part of a Store that keeps one small event per
// finished call, so figures for a period (duplicate hit rate, replay
// latency) survive the process that measured them; metrics live only as
// long as their process. Callers find it with a type assertion:
//
//	if el, ok := store.(ledger.EventLog); ok {
//		st, err := el.Stats(ctx, ledger.StatsQuery{Tenant: "acme", Since: dayAgo})
//	}
//
// Events hold no key and no arguments, only what the statistics need.
type EventLog interface {
	// AppendEvents stores events in one write. Events are statistics, not
	// records: a rare loss or duplicate after a crash is acceptable.
	AppendEvents(ctx context.Context, events []Event) error

	// Stats summarises the events of q.Tenant at or after q.Since, and
	// counts the tenant's records that entered UNKNOWN in that period and
	// are still unresolved.
	Stats(ctx context.Context, q StatsQuery) (Stats, error)

	// PurgeEvents deletes events older than before and reports how many.
	PurgeEvents(ctx context.Context, before time.Time) (int, error)
}

// Validate checks an event before a Store appends it: a valid tenant, a
// known side, and a tool, outcome and time.
func (e Event) Validate() error {
	if err := ValidateTenant(e.Tenant); err != nil {
		return err
	}
	if e.Side != SideClient && e.Side != SideServer {
		return fmt.Errorf("ledger: event side %q is neither %q nor %q", e.Side, SideClient, SideServer)
	}
	if e.Tool == "" || e.Outcome == "" || e.At.IsZero() {
		return errors.New("ledger: event tool, outcome and time are required")
	}
	return nil
}

// Side says which end of a call an event or metric comes from.
type Side string

// The two sides.
const (
	SideClient Side = "client" // the calling agent's ledger (package client)
	SideServer Side = "server" // the receiving server's ledger (package server)
)

// Outcome is how one call ended, on one side.
type Outcome string

// Outcomes of a call. Exactly one per call and side.
const (
	// OutcomeSucceeded: this call ran the tool and it returned a result.
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeFailed: this call ran the tool and it said no (isError).
	OutcomeFailed Outcome = "failed"
	// OutcomeReplayed: a duplicate answered from the ledger (a duplicate
	// hit); nothing ran.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeKeyConflict: the key was bound to other arguments; nothing ran.
	OutcomeKeyConflict Outcome = "key_conflict"
	// OutcomeInProgress: another caller held the operation past the wait
	// bound (an in-progress timeout).
	OutcomeInProgress Outcome = "in_progress"
	// OutcomeUnknown: the outcome is not known; the record is UNKNOWN.
	OutcomeUnknown Outcome = "unknown"
	// OutcomeDenied: a person or policy refused the call.
	OutcomeDenied Outcome = "denied"
	// OutcomeNotSent: the request provably never reached the tool
	// (RETRYABLE); it may be repeated.
	OutcomeNotSent Outcome = "not_sent"
	// OutcomeRejected: nothing ran and nothing will (REJECTED): the
	// arguments were refused before the tool ran, or no one confirmed.
	OutcomeRejected Outcome = "rejected"
	// OutcomeAwaiting: the call waits for a person's approval
	// (PENDING_APPROVAL); nothing ran yet.
	OutcomeAwaiting Outcome = "awaiting_approval"
	// OutcomeInvalid: the request broke a rule (key, arguments, tenant)
	// and nothing was stored.
	OutcomeInvalid Outcome = "invalid"
	// OutcomeError: anything else: the ledger failed, the caller gave up.
	OutcomeError Outcome = "error"
)

// Event is one finished call on one side.
type Event struct {
	Tenant  string
	Tool    string
	Side    Side
	Outcome Outcome
	// Duplicate: the call found an earlier record of its key and was
	// answered from it (replayed, or told in progress or unknown) without
	// running the tool. On the server side it is a downstream duplicate
	// rejection.
	Duplicate bool
	// Waited: the call waited for another caller's execution in progress.
	Waited bool
	// Attempts is how many requests the call sent (0 when none).
	Attempts int
	// Latency is how long the call took from start to answer.
	Latency time.Duration
	At      time.Time
}

// StatsQuery selects the events Stats summarises.
type StatsQuery struct {
	Tenant string
	Since  time.Time // events at or after Since
	Side   Side      // empty: both sides
}

// Stats are a period's figures.
type Stats struct {
	// Calls counts every finished call (the denominator of the rates).
	Calls int64 `json:"calls"`
	// DuplicateHits counts calls answered by a replay.
	DuplicateHits int64 `json:"duplicateHits"`
	// KeyConflicts counts keys reused with other arguments.
	KeyConflicts int64 `json:"keyConflicts"`
	// InProgressWaits counts calls that waited for another execution;
	// InProgressTimeouts those that gave up waiting.
	InProgressWaits    int64 `json:"inProgressWaits"`
	InProgressTimeouts int64 `json:"inProgressTimeouts"`
	// Unknown counts records that entered UNKNOWN in the period and are
	// still UNKNOWN (from the records, not the events).
	Unknown int64 `json:"unknown"`
	// DownstreamDuplicates counts server-side duplicates stopped before
	// the handler.
	DownstreamDuplicates int64 `json:"downstreamDuplicates"`
	// ReplayP50 and ReplayP99 are nearest-rank percentiles of replay
	// latency; zero when there was no replay.
	ReplayP50 time.Duration `json:"replayP50"`
	ReplayP99 time.Duration `json:"replayP99"`
}

// DuplicateHitRate is DuplicateHits per call (0 without calls).
func (s Stats) DuplicateHitRate() float64 { return ratio(s.DuplicateHits, s.Calls) }

// KeyConflictRate is KeyConflicts per call (0 without calls).
func (s Stats) KeyConflictRate() float64 { return ratio(s.KeyConflicts, s.Calls) }

func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// NearestRank returns the 1-based rank of percentile p (0 < p <= 1) among
// n sorted values: ceil(p*n), at least 1. Stores use it so every backend
// reports the same percentile for the same data.
func NearestRank(p float64, n int64) int64 {
	// The epsilon keeps 0.99*100 at rank 99 despite float rounding.
	return max(int64(math.Ceil(p*float64(n)-1e-9)), 1)
}

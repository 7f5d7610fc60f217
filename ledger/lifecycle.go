package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/ledger/process"
)

// Lifecycle is the one implementation of an operation's life in a Store:
// claim; the winner runs under a renewed, fenced lease and records what
// happened; a follower waits for the record, ends a dead owner's lease, and
// gets the record. The client, the server middleware and the proxy adapt
// MCP to it; what each state means is in table.go.
//
//	lc := &ledger.Lifecycle{Store: store, Owner: process.NewOwner("payments")}
//	rec, ran, err := lc.Do(ctx, req, func(ctx context.Context, l ledger.Lease) ledger.Report {
//		// ... run the call; l.Fence travels with it ...
//		return ledger.Report{On: ledger.OnSucceeded, Result: raw}
//	})
//
// The zero value is not usable: Store is required. Other fields have
// working zero values. A Lifecycle is safe for concurrent use.
type Lifecycle struct {
	Store Store
	// Owner names this process in leases (process.NewOwner("mcpledger") when empty).
	Owner string
	// Lease is the length of a lease, renewed every Lease/3 while it is
	// held (DefaultLease when zero).
	Lease time.Duration
	// Wait bounds how long a follower waits for a leased record before it
	// gets ErrInProgress (DefaultWait when zero).
	Wait time.Duration
	// Now is the clock (time.Now when nil); give the Store the same one.
	Now func() time.Time
	// Logger receives lease renewal failures (discarded when nil).
	Logger *slog.Logger
	// Waiting, when set, is told once per Follow that a follower waits for
	// a leased record (for metrics).
	Waiting func(ctx context.Context, rec *Record)
	// Ended, when set, is told that a follower ended the leases of gone
	// owners: how many records it moved, by which trigger, and the tool
	// ("" when a sweep of expired leases moved them).
	Ended func(ctx context.Context, on Trigger, tool string, n int)
}

// Defaults of a Lifecycle.
const (
	DefaultWait = 30 * time.Second
	// RecordTimeout bounds the write of an outcome. It runs detached from
	// the caller's context: a call that was sent must leave its outcome
	// even when its caller has gone.
	RecordTimeout = 10 * time.Second
	// leaseSlack is how long past a lease's end a follower waits for the
	// owner's renewal before it ends the lease itself.
	leaseSlack = 250 * time.Millisecond
	// livenessPoll is how often a follower looks at a same-host owner's
	// process while it waits.
	livenessPoll = 100 * time.Millisecond
)

// Report is what an owner says happened to the operation it holds: the
// trigger (OnSucceeded, OnFailed, OnNotSent, OnRefused, OnAmbiguous from
// PROCESSING; OnApprove, OnDeny, OnNoAnswer from PENDING_APPROVAL) and what
// to store with it.
type Report struct {
	On           Trigger
	Result       json.RawMessage
	Compacted    bool
	ErrorKind    string
	ErrorMessage string
	Approval     *Approval
	// Attempts is how many requests were sent.
	Attempts int
	// Resent is set when the operation is a call re-sent from UNKNOWN
	// (ResentOf): an answer that settles it is kept as its finding.
	Resent *Resent
}

// Exec runs the operation the caller won, under lease l.
type Exec func(ctx context.Context, l Lease) Report

// ErrStale wraps ErrLeaseLost for an owner whose write came too late: the
// key was taken over (its fence moved on) and nothing this owner reports
// is recorded.
var ErrStale = fmt.Errorf("%w: a newer owner holds the key", ErrLeaseLost)

func (lc *Lifecycle) owner() string {
	if lc.Owner == "" {
		return process.NewOwner("mcpledger")
	}
	return lc.Owner
}

func (lc *Lifecycle) lease() time.Duration {
	if lc.Lease <= 0 {
		return DefaultLease
	}
	return lc.Lease
}

func (lc *Lifecycle) now() time.Time {
	if lc.Now == nil {
		return time.Now()
	}
	return lc.Now()
}

func (lc *Lifecycle) log() *slog.Logger {
	if lc.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return lc.Logger
}

// Claim claims req under this Lifecycle's owner and lease (fields req
// leaves empty).
func (lc *Lifecycle) Claim(ctx context.Context, req ClaimRequest) (Claim, error) {
	if req.Owner == "" {
		req.Owner = lc.owner()
	}
	if req.Lease <= 0 {
		req.Lease = lc.lease()
	}
	return lc.Store.Claim(ctx, req)
}

// maxReclaims bounds how often one call claims a key that went back to a
// reclaimable state under it.
const maxReclaims = 3

// Do claims req; the winner runs fn under the lease (Execute) and every
// other caller follows the record (Follow). A record that turns out
// reclaimable (RETRYABLE, REJECTED) is claimed again. It returns the record
// to answer from and whether this call ran fn. A key reused with other
// arguments returns the stored record and an error wrapping ErrKeyReused.
func (lc *Lifecycle) Do(ctx context.Context, req ClaimRequest, fn Exec) (rec *Record, ran bool, err error) {
	var ferr error
	claimed, err := lc.Contend(ctx, req, func(held *Record) {
		ran = true
		rec, _, ferr = lc.Execute(ctx, held, fn)
	}, func(found *Record) bool {
		rec, ferr = lc.Follow(ctx, found)
		return ferr == nil && Act(rec) == ActReclaim
	})
	if err != nil {
		if errors.Is(err, ErrInProgress) && rec != nil {
			return rec, false, err
		}
		return claimed, false, err
	}
	return rec, ran, ferr
}

// Contend claims req until this call holds the record or has met another
// caller's: won is handed the record this call now holds; lost the record
// another caller holds or finished, and reports whether that record turned
// out reclaimable (nothing ran), to be claimed again. Contend returns the
// last record the claim returned and the claim's error: ErrKeyReused with
// the stored record, a store failure, or ErrInProgress once the key went
// back to a reclaimable state too often while this call contended.
func (lc *Lifecycle) Contend(ctx context.Context, req ClaimRequest, won func(*Record), lost func(*Record) (again bool)) (*Record, error) {
	var rec *Record
	for range maxReclaims {
		cl, err := lc.Claim(ctx, req)
		if err != nil {
			return cl.Record, err
		}
		rec = cl.Record
		if cl.Won {
			won(rec)
			return rec, nil
		}
		if !lost(rec) {
			return rec, nil
		}
	}
	return rec, fmt.Errorf("%w: %s key %s went back to %s %d times while this call waited", ErrInProgress, req.Tool, ShortHash(req.Key), rec.State, maxReclaims)
}

// Execute runs fn under rec's lease, renewed until fn returns, and records
// its report. It returns the stored record and the report.
func (lc *Lifecycle) Execute(ctx context.Context, rec *Record, fn Exec) (*Record, Report, error) {
	l := LeaseOf(rec)
	stop := lc.Hold(ctx, l)
	rep := fn(ctx, l)
	stop()
	after, err := lc.Settle(ctx, l, rec.State, rep)
	return after, rep, err
}

// Hold renews lease l every Lease/3 until stop is called; stop waits for a
// renewal under way. A timer, not a goroutine: most calls end long before
// the first renewal.
func (lc *Lifecycle) Hold(ctx context.Context, l Lease) (stop func()) {
	d := lc.lease()
	every := max(d/3, time.Millisecond)
	var (
		mu      chan struct{} // a one-slot lock, held by a renewal and by stop
		stopped bool          // guarded by mu
		t       *time.Timer   // guarded by mu
	)
	mu = make(chan struct{}, 1)
	renew := func() {
		mu <- struct{}{}
		defer func() { <-mu }()
		if stopped {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
		err := lc.Store.Renew(rctx, l, d)
		cancel()
		if err != nil {
			lc.log().Warn("mcpledger: lease renewal failed", "tool", l.Tool, "key", ShortHash(l.Key), "fence", l.Fence, "err", err)
			if errors.Is(err, ErrLeaseLost) {
				return // no one renews a lease that is gone
			}
		}
		t.Reset(every)
	}
	mu <- struct{}{}
	t = time.AfterFunc(every, renew)
	<-mu
	return func() {
		mu <- struct{}{}
		stopped = true
		t.Stop()
		<-mu
	}
}

// Settle records what the owner of lease l reports about the record it
// holds in state from. A final result (SUCCEEDED, FAILED) that finds the
// lease lost to expiry is recorded from UNKNOWN, under the same fence: this
// owner knows what happened, and that is what reconciles the record. When
// the key was taken over meanwhile, nothing is recorded and the error wraps
// ErrStale. The write is detached from ctx (bounded by RecordTimeout).
func (lc *Lifecycle) Settle(ctx context.Context, l Lease, from State, rep Report) (*Record, error) {
	to, err := Next(from, rep.On)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	defer cancel()
	t := Transition{
		ID: l.ID, From: from, To: to, Owner: l.Owner, Fence: l.Fence, Lease: lc.lease(),
		Result: rep.Result, Compacted: rep.Compacted, ErrorKind: rep.ErrorKind, ErrorMessage: rep.ErrorMessage,
		Approval: rep.Approval, AddAttempts: rep.Attempts, Finding: rep.Resent.settles(to),
	}
	rec, err := lc.Store.Transition(wctx, t)
	if !errors.Is(err, ErrLeaseLost) {
		if err != nil {
			// The store failed: no one renews the lease now, and a caller
			// in this process that meets the record knows at once that
			// its owner is done with it.
			abandoned.add(l)
		}
		return rec, err
	}
	if late, ok := table[edge{StateUnknown, rep.On}]; ok && late.Final() {
		// Findings may have joined the history since the lease ended;
		// the answer is recorded without one rather than lost to them.
		t.From, t.Finding = StateUnknown, nil
		if rec, lerr := lc.Store.Transition(wctx, t); lerr == nil {
			return rec, nil
		} else if !errors.Is(lerr, ErrLeaseLost) && !errors.Is(lerr, ErrStateChanged) {
			return nil, lerr
		}
	}
	return nil, fmt.Errorf("ledger: %s key %s: the owner's %s report was not recorded (%w): %w", l.Tool, ShortHash(l.Key), rep.On, err, ErrStale)
}

// Follow waits, up to Wait, while rec is leased, and returns the record
// once it is not. An owner on this host whose process is gone is known dead
// at once and a lease that ended is ended here: PROCESSING becomes UNKNOWN
// (never run again blindly), PENDING_APPROVAL becomes REJECTED (nothing
// ran). When the bound passes first it returns the latest record and an
// error wrapping ErrInProgress; when ctx ends, ctx's error.
func (lc *Lifecycle) Follow(ctx context.Context, rec *Record) (*Record, error) {
	bound := lc.Wait
	if bound <= 0 {
		bound = DefaultWait
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if lc.Waiting != nil && rec.State.Waiting() && !rec.Tombstone {
		lc.Waiting(ctx, rec)
	}
	for rec.State.Waiting() && !rec.Tombstone {
		if on, why, ok := lc.ended(rec); ok {
			after, err := lc.endLease(wctx, rec, on, why)
			if err != nil {
				return rec, lc.waitErr(ctx, wctx, rec, bound, err)
			}
			rec = after
			continue
		}
		step := time.Duration(-1)
		if !rec.LeaseUntil.IsZero() {
			step = rec.LeaseUntil.Sub(lc.now()) + leaseSlack
		}
		if process.Local(rec.Owner) && (step < 0 || step > livenessPoll) {
			step = livenessPoll
		}
		sctx, scancel := wctx, context.CancelFunc(func() {})
		if step >= 0 {
			sctx, scancel = context.WithTimeout(wctx, max(step, time.Millisecond))
		}
		latest, err := lc.Store.Wait(sctx, rec.ID)
		scancel()
		if latest != nil {
			rec = latest
		}
		if err == nil || errors.Is(err, context.DeadlineExceeded) && wctx.Err() == nil {
			continue // the record changed, or it is time to look at the owner again
		}
		return rec, lc.waitErr(ctx, wctx, rec, bound, err)
	}
	return rec, nil
}

// waitErr is the error of a Follow that stopped waiting: ctx's own error
// when the caller gave up, ErrInProgress when the bound passed, else err.
func (lc *Lifecycle) waitErr(ctx, wctx context.Context, rec *Record, bound time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case wctx.Err() != nil:
		return fmt.Errorf("%w: %s key %s is still %s after %v", ErrInProgress, rec.Tool, ShortHash(rec.Key), rec.State, bound)
	}
	return fmt.Errorf("ledger: wait for %s key %s: %w", rec.Tool, ShortHash(rec.Key), err)
}

// ended reports whether rec's owner is known to be gone: its process (on
// this host) or its lease.
func (lc *Lifecycle) ended(rec *Record) (Trigger, string, bool) {
	if process.Gone(rec.Owner) {
		return OnOwnerDead, fmt.Sprintf("the owner process %s is gone", rec.Owner), true
	}
	if abandoned.has(LeaseOf(rec)) {
		return OnOwnerDead, fmt.Sprintf("its owner %s, this process, could not record the outcome and no longer runs it", rec.Owner), true
	}
	if !rec.LeaseUntil.IsZero() && lc.now().After(rec.LeaseUntil.Add(leaseSlack)) {
		return OnLeaseExpired, fmt.Sprintf("the lease of %s ended before it recorded an outcome", rec.Owner), true
	}
	return "", "", false
}

// endLease moves rec on for its gone owner and reads the record again. A
// lease that ran out is ended by Store.ExpireLeases, which compares the
// lease's end in the same statement, so an owner that renewed just now
// keeps it. A dead process cannot renew: its record is moved in its own
// name and fence, so the write fails harmlessly when the owner did record
// something (or a newer owner took over) before it died.
func (lc *Lifecycle) endLease(ctx context.Context, rec *Record, on Trigger, why string) (*Record, error) {
	if on == OnLeaseExpired {
		n, err := lc.Store.ExpireLeases(ctx)
		if err != nil {
			return rec, fmt.Errorf("ledger: expire leases: %w", err)
		}
		if lc.Ended != nil && n > 0 {
			lc.Ended(ctx, on, "", n)
		}
	} else {
		to, err := Next(rec.State, on)
		if err != nil {
			return rec, err
		}
		_, err = lc.Store.Transition(ctx, Transition{
			ID: rec.ID, From: rec.State, To: to, Owner: rec.Owner, Fence: rec.Fence,
			ErrorKind: KindOwnerDead, ErrorMessage: why,
		})
		switch {
		case err == nil && lc.Ended != nil:
			lc.Ended(ctx, on, rec.Tool, 1)
		case err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrStateChanged):
			return rec, fmt.Errorf("ledger: end the lease of %s key %s: %w", rec.Tool, ShortHash(rec.Key), err)
		}
	}
	latest, err := lc.Store.Get(ctx, rec.ID)
	if err != nil {
		return rec, fmt.Errorf("ledger: read %s key %s: %w", rec.Tool, ShortHash(rec.Key), err)
	}
	if latest.State == rec.State && latest.Fence == rec.Fence && latest.LeaseUntil.Equal(rec.LeaseUntil) && on == OnLeaseExpired {
		// The store's clock does not see the lease as ended yet: wait a
		// little before looking again rather than spin.
		return latest, waitBriefly(ctx, leaseSlack)
	}
	return latest, nil
}

func waitBriefly(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// abandoned holds the leases this process took and could not settle (the
// store failed at the write), so that a follower in this process ends such
// a lease at once instead of waiting out a lease no one renews. A follower
// in another process waits for the lease, as for any owner it cannot see.
var abandoned leaseSet

// maxAbandoned bounds the set; past it the set starts over, and a
// forgotten lease is waited out.
const maxAbandoned = 1 << 12

type leaseSet struct {
	mu sync.Mutex // guards m
	m  map[Lease]struct{}
}

func (s *leaseSet) add(l Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxAbandoned {
		s.m = make(map[Lease]struct{})
	}
	s.m[l] = struct{}{}
}

func (s *leaseSet) has(l Lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[l]
	return ok
}

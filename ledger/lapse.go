package ledger

import (
	"context"
	"time"
)

// A call that waits for approval (PENDING_APPROVAL) holds a lease that is
// its approval's expiry. Once the lease has run out, nothing ran and nothing
// will: the record is REJECTED, and Store.ExpireLeases writes it so at the
// next sweep or the next call with its key. Until then the stored state is
// stale, and a person reading the record (ledger list and show, the
// export, the console) must not see a call that still waits. AsRead is
// that reading, computed here from the same rule ExpireLeases applies, so
// every reader agrees with the write that follows; nothing is written.

// Lapsed reports whether r waits for approval under a lease that ran out at
// or before now: it reads REJECTED.
func Lapsed(r *Record, now time.Time) bool {
	return r != nil && r.State == StatePendingApproval && !r.Tombstone &&
		!r.LeaseUntil.IsZero() && !r.LeaseUntil.After(now)
}

// AsRead returns r as it reads at now: a lapsed approval (Lapsed) is a copy
// in REJECTED, with the error kind and message ExpireLeases writes and no
// lease; any other record is r itself.
func AsRead(r *Record, now time.Time) *Record {
	if !Lapsed(r, now) {
		return r
	}
	c := *r
	c.State = StateRejected
	c.ErrorKind = KindApprovalExpired
	c.ErrorMessage = "the approval lease of " + r.Owner + " ended before anyone answered"
	c.UpdatedAt = r.LeaseUntil
	c.LeaseUntil = time.Time{}
	return &c
}

// AsReadStore returns a Store whose reads (Get, List, FindRecent, Wait)
// return records AsRead at now (time.Now when nil), for the processes that
// show records to people. A List filtered by state selects by the state as
// read: PENDING_APPROVAL leaves lapsed approvals out, REJECTED takes them
// in. Writes pass through unchanged. The returned Store also implements
// EventLog when st does; Unwrap reaches st.
func AsReadStore(st Store, now func() time.Time) Store {
	if now == nil {
		now = time.Now
	}
	rs := &readStore{Store: st, now: now}
	if el, ok := st.(EventLog); ok {
		return &readEventStore{readStore: rs, EventLog: el}
	}
	return rs
}

type readStore struct {
	Store
	now func() time.Time
}

type readEventStore struct {
	*readStore
	EventLog
}

func (s *readStore) Unwrap() Store { return s.Store }

func (s *readStore) Get(ctx context.Context, id ID) (*Record, error) {
	r, err := s.Store.Get(ctx, id)
	if r != nil {
		r = AsRead(r, s.now())
	}
	return r, err
}

func (s *readStore) Wait(ctx context.Context, id ID) (*Record, error) {
	r, err := s.Store.Wait(ctx, id)
	if r != nil {
		r = AsRead(r, s.now())
	}
	return r, err
}

func (s *readStore) FindRecent(ctx context.Context, q RecentQuery) ([]*Record, error) {
	recs, err := s.Store.FindRecent(ctx, q)
	now := s.now()
	for i, r := range recs {
		recs[i] = AsRead(r, now)
	}
	return recs, err
}

// List reads pages of st until f's page is full or the records end. A
// filter on PENDING_APPROVAL or REJECTED reads the states that may read as
// it and keeps the records that do; the cursor is the position after the
// last record looked at, so paging goes on where it stopped.
func (s *readStore) List(ctx context.Context, f Filter) (Page, error) {
	want := f.State
	inner := f
	switch want {
	case StateRejected:
		// A lapsed approval is stored PENDING_APPROVAL: look at every
		// state, keep what reads REJECTED.
		inner.State = ""
	case StatePendingApproval, "":
	default:
		p, err := s.Store.List(ctx, f)
		return p, err // no record reads as another settled state
	}
	size := f.PageSize()
	var out Page
	for {
		inner.Limit = size
		p, err := s.Store.List(ctx, inner)
		if err != nil {
			return out, err
		}
		now := s.now()
		for i, r := range p.Records {
			r = AsRead(r, now)
			if want == "" || r.State == want {
				out.Records = append(out.Records, r)
			}
			if len(out.Records) == size {
				if i < len(p.Records)-1 || p.Next != "" {
					out.Next = EncodeCursor(p.Records[i])
				}
				return out, nil
			}
		}
		if p.Next == "" {
			return out, nil
		}
		inner.Cursor = p.Next
	}
}

package caller

import (
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Finals remembers finished records a process has seen. A final record
// (SUCCEEDED, FAILED, DENIED) never changes: the state table has no edge out
// of it, and a store replaces it only after ExpiresAt. So until then a
// repeat can be answered from memory, without reading the ledger. Each
// Caller keeps one unless Options.Finals gives it one to share: the
// Callers of a proxy (one per host session) then remember within one
// memory budget rather than one each, and a repeat of a key that another
// host session's call finished is answered from memory too. Sharing is
// sound among Callers of one store: a record is named by its ledger.ID,
// tenant and layer included, and the store would hand any of them the
// same record. The zero value is ready to use, with a budget of 16 MiB.
type Finals struct {
	budget int // 0: finalsBudget
	// mu guards m and bytes.
	mu    sync.Mutex
	m     map[ledger.ID]*final
	bytes int // sum of size over m
}

// NewFinals returns a memory of finished records that takes about budget
// bytes at most (16 MiB when budget is not positive).
func NewFinals(budget int) *Finals {
	return &Finals{budget: max(budget, 0)}
}

// Forget drops every remembered record: a later repeat reads the ledger.
// An idle process gives the memory back this way.
func (f *Finals) Forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m, f.bytes = nil, 0
}

func (f *Finals) limit() int {
	if f.budget > 0 {
		return f.budget
	}
	return finalsBudget
}

// final is a remembered record and, once replayed, its decoded result: a
// private template that callers only ever get copies of. tmpl holds the
// result type of the Caller that set it; one of another type reads as
// none.
type final struct {
	rec  *ledger.Record
	tmpl any
	has  bool // tmpl is set
}

// finalsBudget bounds the memory the remembered records take, as size
// counts it.
const finalsBudget = 16 << 20

// recordOverhead approximates what a remembered record costs beyond its
// variable-length fields (the Record and final structs, times, map entry).
const recordOverhead = 512

// size approximates the memory r takes while remembered; a decoded
// template is counted as a second copy of the result.
func size(r *ledger.Record) int {
	return recordOverhead + 2*len(r.Result) + len(r.Arguments) + len(r.Tenant) + len(r.Tool) +
		len(r.Key) + len(r.Session) + len(r.Fingerprint) + len(r.Owner) + len(r.ErrorKind) +
		len(r.ErrorMessage) + len(r.TraceID) + len(r.SpanID)
}

// get returns the remembered record of id while it has not expired.
func (f *Finals) get(id ledger.ID, now time.Time) (*ledger.Record, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[id]
	if !ok {
		return nil, false
	}
	if !now.Before(e.rec.ExpiresAt) {
		f.drop(id, e.rec)
		return nil, false
	}
	return e.rec, true
}

// template returns the decoded result remembered for r, if any.
func template[R comparable](f *Finals, r *ledger.Record) (R, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[r.ID]; ok && e.rec == r && e.has {
		t, ok := e.tmpl.(R)
		return t, ok
	}
	var zero R
	return zero, false
}

// setTemplate remembers the decoded result of r while r is remembered.
func (f *Finals) setTemplate(r *ledger.Record, t any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[r.ID]; ok && e.rec == r {
		e.tmpl, e.has = t, true
	}
}

// put remembers r when it is final. Entries are evicted in no particular
// order once the budget is reached; a miss only costs a ledger read.
func (f *Finals) put(r *ledger.Record) {
	if r == nil || r.Tombstone || !r.State.Final() {
		return
	}
	n, budget := size(r), f.limit()
	if n > budget/4 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[ledger.ID]*final{}
	}
	if old, ok := f.m[r.ID]; ok {
		f.drop(r.ID, old.rec)
	}
	for id, old := range f.m {
		if f.bytes+n <= budget {
			break
		}
		f.drop(id, old.rec)
	}
	f.m[r.ID] = &final{rec: r}
	f.bytes += n
}

// putResult remembers r, which this process just recorded from res, with
// a private copy of res as its template: the result a replay hands out is
// then copied from memory, never decoded from the stored bytes, which
// would cost an SDK decode (tens of µs) on the first replay of each key.
// A compacted record's stored result differs from res and keeps no
// template.
func putResult[R comparable](f *Finals, r *ledger.Record, res R, codec Codec[R]) {
	f.put(r)
	var zero R
	if r == nil || res == zero || r.Compacted {
		return
	}
	if t, ok := codec.Copy(res); ok {
		f.setTemplate(r, t)
	}
}

func (f *Finals) drop(id ledger.ID, r *ledger.Record) {
	delete(f.m, id)
	f.bytes -= size(r)
}

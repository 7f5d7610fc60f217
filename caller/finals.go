package caller

import (
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// finals remembers finished records this process has seen. A final record
// (SUCCEEDED, FAILED, DENIED) never changes: the state table has no edge out
// of it, and a store replaces it only after ExpiresAt. So until then a
// repeat can be answered from memory, without reading the ledger. The zero
// value is ready to use.
type finals[R comparable] struct {
	// mu guards m and bytes.
	mu    sync.Mutex
	m     map[ledger.ID]*final[R]
	bytes int // sum of size over m
}

// final is a remembered record and, once replayed, its decoded result: a
// private template that callers only ever get copies of.
type final[R comparable] struct {
	rec  *ledger.Record
	tmpl R
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
func (f *finals[R]) get(id ledger.ID, now time.Time) (*ledger.Record, bool) {
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
func (f *finals[R]) template(r *ledger.Record) (R, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[r.ID]; ok && e.rec == r && e.has {
		return e.tmpl, true
	}
	var zero R
	return zero, false
}

// setTemplate remembers the decoded result of r while r is remembered.
func (f *finals[R]) setTemplate(r *ledger.Record, t R) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[r.ID]; ok && e.rec == r {
		e.tmpl, e.has = t, true
	}
}

// put remembers r when it is final. Entries are evicted in no particular
// order once the budget is reached; a miss only costs a ledger read.
func (f *finals[R]) put(r *ledger.Record) {
	if r == nil || r.Tombstone || !r.State.Final() {
		return
	}
	n := size(r)
	if n > finalsBudget/4 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[ledger.ID]*final[R]{}
	}
	if old, ok := f.m[r.ID]; ok {
		f.drop(r.ID, old.rec)
	}
	for id, old := range f.m {
		if f.bytes+n <= finalsBudget {
			break
		}
		f.drop(id, old.rec)
	}
	f.m[r.ID] = &final[R]{rec: r}
	f.bytes += n
}

// putResult remembers r, which this process just recorded from res, with
// a private copy of res as its template: the result a replay hands out is
// then copied from memory, never decoded from the stored bytes, which
// would cost an SDK decode (tens of µs) on the first replay of each key.
// A compacted record's stored result differs from res and keeps no
// template.
func (f *finals[R]) putResult(r *ledger.Record, res R, codec Codec[R]) {
	f.put(r)
	var zero R
	if r == nil || res == zero || r.Compacted {
		return
	}
	if t, ok := codec.Copy(res); ok {
		f.setTemplate(r, t)
	}
}

func (f *finals[R]) drop(id ledger.ID, r *ledger.Record) {
	delete(f.m, id)
	f.bytes -= size(r)
}

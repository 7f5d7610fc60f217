package console

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// A chart range: how far back it looks and its interval.
type chartRange struct {
	Name    string
	Span    time.Duration
	Step    time.Duration
	Buckets int
}

// chartRanges are the ranges the Stats page offers: each about 30 to 60
// intervals, so a chart reads a few hundred grouped rows at most.
var chartRanges = []chartRange{
	{"1h", time.Hour, time.Minute, 60},
	{"24h", 24 * time.Hour, 30 * time.Minute, 48},
	{"7d", 7 * 24 * time.Hour, 6 * time.Hour, 28},
}

func rangeNamed(name string) (chartRange, bool) {
	for _, cr := range chartRanges {
		if cr.Name == name {
			return cr, true
		}
	}
	return chartRange{}, false
}

// maxTimelineRecords bounds each read of records behind the charts of open
// and resolved records: the UNKNOWN and PENDING_APPROVAL records now (by
// their state's index) and the records created in the range and one range
// before it (by the list index). Past it the charts say they are partial.
const maxTimelineRecords = 5000

// timeline is the JSON the charts draw: one x (the end of each interval,
// Unix seconds, the last one now) and the series of each chart.
type timeline struct {
	Range   string  `json:"range"`
	Step    int64   `json:"step"` // seconds
	X       []int64 `json:"x"`
	Charts  []chart `json:"charts"`
	Partial bool    `json:"partial,omitempty"` // a read of records hit maxTimelineRecords
}

type chart struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Unit   string   `json:"unit"` // calls, share, seconds, records
	Series []series `json:"series"`
}

// series values are per interval; null where there is nothing to show (a
// share of no calls, a quantile of no latencies).
type series struct {
	Label  string     `json:"label"`
	Values []*float64 `json:"values"`
}

// series handles GET /stats/series?range=24h: the charts' data, for the
// page's first draw and its polls.
func (c *Console) series(w http.ResponseWriter, r *http.Request) {
	cr, ok := rangeNamed(r.URL.Query().Get("range"))
	if !ok {
		http.Error(w, "console: range must be 1h, 24h or 7d", http.StatusBadRequest)
		return
	}
	tl, err := c.timeline(r.Context(), c.tenant(r), cr)
	if err != nil {
		http.Error(w, "console: "+err.Error()+"; check that the ledger is reachable and reload", http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(tl); err != nil {
		return // the browser went away
	}
}

// timeline reads the range's figures: calls, shares and latency from the
// event log's series; UNKNOWN records, approvals and resolutions from the
// records.
func (c *Console) timeline(ctx context.Context, tenant string, cr chartRange) (*timeline, error) {
	now := c.opts.Now()
	// The last interval ends at the next step boundary and holds now.
	end := now.Truncate(cr.Step).Add(cr.Step)
	since := end.Add(-time.Duration(cr.Buckets) * cr.Step)
	tl := &timeline{Range: cr.Name, Step: int64(cr.Step / time.Second)}
	ends := make([]time.Time, cr.Buckets)
	for b := range ends {
		ends[b] = since.Add(time.Duration(b+1) * cr.Step)
		if ends[b].After(now) {
			ends[b] = now
		}
		tl.X = append(tl.X, ends[b].Unix())
	}
	if es := eventSeries(c.opts.Store); es != nil {
		s, err := es.Series(ctx, ledger.SeriesQuery{Tenant: tenant, Since: since, Step: cr.Step, Buckets: cr.Buckets})
		if err != nil {
			return nil, err
		}
		tl.Charts = append(tl.Charts, callCharts(s, cr.Buckets)...)
	}
	rc, partial, err := c.recordCharts(ctx, tenant, since, cr, ends)
	if err != nil {
		return nil, err
	}
	tl.Charts, tl.Partial = append(tl.Charts, rc...), partial
	return tl, nil
}

func num(f float64) *float64 { return &f }

func zeros(n int) []*float64 {
	out := make([]*float64, n)
	for i := range out {
		out[i] = num(0)
	}
	return out
}

// callCharts are the charts of the event log: calls by tool, outcomes,
// replay and duplicate shares, latency quantiles.
func callCharts(s *ledger.Series, n int) []chart {
	byTool, byOutcome := map[string][]*float64{}, map[string][]*float64{}
	calls, replays, dups := make([]float64, n), make([]float64, n), make([]float64, n)
	add := func(m map[string][]*float64, k string, b int, v float64) {
		if m[k] == nil {
			m[k] = zeros(n)
		}
		*m[k][b] += v
	}
	for _, c := range s.Counts {
		if c.Bucket < 0 || c.Bucket >= n {
			continue
		}
		add(byTool, c.Tool, c.Bucket, float64(c.Calls))
		add(byOutcome, string(c.Outcome), c.Bucket, float64(c.Calls))
		calls[c.Bucket] += float64(c.Calls)
		dups[c.Bucket] += float64(c.Duplicates)
		if c.Outcome == ledger.OutcomeReplayed {
			replays[c.Bucket] += float64(c.Calls)
		}
	}
	share := func(part []float64) []*float64 {
		out := make([]*float64, n)
		for b := range out {
			if calls[b] > 0 {
				out[b] = num(part[b] / calls[b])
			}
		}
		return out
	}
	hist := make([][]int64, n)
	for b := range hist {
		hist[b] = make([]int64, len(ledger.LatencyBounds)+1)
	}
	for _, l := range s.Latency {
		if l.Bucket >= 0 && l.Bucket < n && l.Class >= 0 && l.Class <= len(ledger.LatencyBounds) {
			hist[l.Bucket][l.Class] += l.Calls
		}
	}
	quantile := func(p float64) []*float64 {
		out := make([]*float64, n)
		for b := range out {
			if d := ledger.LatencyQuantile(p, hist[b]); d > 0 {
				out[b] = num(d.Seconds())
			}
		}
		return out
	}
	return []chart{
		{ID: "calls", Title: "Calls per interval, by tool", Unit: "calls", Series: sorted(byTool)},
		{ID: "outcomes", Title: "Outcomes per interval", Unit: "calls", Series: sorted(byOutcome)},
		{ID: "shares", Title: "Replay and duplicate share", Unit: "share", Series: []series{
			{Label: "replayed", Values: share(replays)}, {Label: "duplicate", Values: share(dups)},
		}},
		{ID: "latency", Title: "Latency quantiles (upper bound of the class)", Unit: "seconds", Series: []series{
			{Label: "p50", Values: quantile(0.5)}, {Label: "p90", Values: quantile(0.9)}, {Label: "p99", Values: quantile(0.99)},
		}},
	}
}

func sorted(m map[string][]*float64) []series {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]series, 0, len(keys))
	for _, k := range keys {
		out = append(out, series{Label: k, Values: m[k]})
	}
	return out
}

// span is a time a record stood in a state: from start to end (zero: it
// still does).
type span struct{ start, end time.Time }

func (s span) covers(t time.Time) bool {
	return !s.start.After(t) && (s.end.IsZero() || t.Before(s.end))
}

// recordCharts are the charts of the records: UNKNOWN records open at the
// end of each interval and the oldest one's age, approvals waiting and the
// oldest wait, and the time to resolution of the records resolved in each
// interval.
func (c *Console) recordCharts(ctx context.Context, tenant string, since time.Time, cr chartRange, ends []time.Time) ([]chart, bool, error) {
	var unknown, approvals []span
	var resolved []span // start: became UNKNOWN; end: resolved
	partial := false
	read := func(f ledger.Filter, each func(*ledger.Record)) error {
		f.Tenant, f.Limit = tenant, 1000
		for n := 0; ; {
			p, err := c.opts.Store.List(ctx, f)
			if err != nil {
				return fmt.Errorf("cannot read the ledger's records: %w", err)
			}
			for _, r := range p.Records {
				each(r)
			}
			n += len(p.Records)
			if p.Next == "" {
				return nil
			}
			if n >= maxTimelineRecords {
				partial = true
				return nil
			}
			f.Cursor = p.Next
		}
	}
	if err := read(ledger.Filter{State: ledger.StateUnknown}, func(r *ledger.Record) {
		unknown = append(unknown, span{start: r.UpdatedAt})
	}); err != nil {
		return nil, false, err
	}
	if err := read(ledger.Filter{State: ledger.StatePendingApproval}, func(r *ledger.Record) {
		approvals = append(approvals, span{start: r.CreatedAt})
	}); err != nil {
		return nil, false, err
	}
	// Records created since one range before this one: the UNKNOWN ones
	// resolved since, and the approvals decided since.
	if err := read(ledger.Filter{Since: since.Add(-cr.Span)}, func(r *ledger.Record) {
		if rs := r.Reconciled; rs != nil && !rs.Since.IsZero() && !rs.At.Before(since) {
			s := span{start: rs.Since, end: rs.At}
			unknown, resolved = append(unknown, s), append(resolved, s)
		}
		if a := r.Approval; a != nil && a.Via != ledger.ViaStanding && !a.At.IsZero() && !a.At.Before(since) && a.At.After(r.CreatedAt) {
			approvals = append(approvals, span{start: r.CreatedAt, end: a.At})
		}
	}); err != nil {
		return nil, false, err
	}
	open := func(spans []span) (count, oldest []*float64) {
		count, oldest = make([]*float64, len(ends)), make([]*float64, len(ends))
		for b, t := range ends {
			n, age := 0.0, 0.0
			for _, s := range spans {
				if s.covers(t) {
					n++
					age = math.Max(age, t.Sub(s.start).Seconds())
				}
			}
			count[b], oldest[b] = num(n), num(age)
		}
		return count, oldest
	}
	uCount, uAge := open(unknown)
	aCount, aAge := open(approvals)
	// Time to resolution: p50 and the longest of the resolutions in each
	// interval.
	perBucket := make([][]float64, len(ends))
	for _, s := range resolved {
		b := int(s.end.Sub(since) / cr.Step)
		if b >= 0 && b < len(ends) {
			perBucket[b] = append(perBucket[b], s.end.Sub(s.start).Seconds())
		}
	}
	p50, longest := make([]*float64, len(ends)), make([]*float64, len(ends))
	for b, ds := range perBucket {
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		p50[b] = num(ds[ledger.NearestRank(0.5, int64(len(ds)))-1])
		longest[b] = num(ds[len(ds)-1])
	}
	return []chart{
		{ID: "unknown", Title: "UNKNOWN records open", Unit: "records", Series: []series{{Label: "open", Values: uCount}}},
		{ID: "unknown-age", Title: "Oldest UNKNOWN record's age", Unit: "seconds", Series: []series{{Label: "oldest", Values: uAge}}},
		{ID: "approvals", Title: "Approvals waiting", Unit: "records", Series: []series{{Label: "waiting", Values: aCount}}},
		{ID: "approval-age", Title: "Longest approval wait", Unit: "seconds", Series: []series{{Label: "oldest", Values: aAge}}},
		{ID: "resolution", Title: "Time to resolution", Unit: "seconds", Series: []series{{Label: "p50", Values: p50}, {Label: "longest", Values: longest}}},
	}, partial, nil
}

// eventSeries is the EventSeries of st or of a store under its wrappers
// (the console's own AsReadStore, agentctl's): series carry no record, so
// no wrapper has anything to change in them. Nil when none has one.
func eventSeries(st ledger.Store) ledger.EventSeries {
	for st != nil {
		if es, ok := st.(ledger.EventSeries); ok {
			return es
		}
		u, ok := st.(interface{ Unwrap() ledger.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}

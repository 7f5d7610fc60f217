package ledger

import (
	"context"
	"fmt"
	"time"
)

// EventSeries is the optional part of an EventLog that counts a period's
// call events per interval, so a chart over time reads a bounded number of
// rows (intervals × tools × outcomes, intervals × latency classes) from the
// events index, however many calls there were. Callers find it with a type
// assertion, as they find EventLog.
type EventSeries interface {
	Series(ctx context.Context, q SeriesQuery) (*Series, error)
}

// MaxSeriesBuckets bounds the intervals of one SeriesQuery.
const MaxSeriesBuckets = 500

// SeriesQuery asks for the events of Tenant from Since (inclusive) in
// Buckets intervals of Step each.
type SeriesQuery struct {
	Tenant  string
	Since   time.Time
	Step    time.Duration
	Buckets int
	Side    Side // empty: both sides
}

// Until is the end of the period (exclusive).
func (q SeriesQuery) Until() time.Time { return q.Since.Add(time.Duration(q.Buckets) * q.Step) }

// Check says what is wrong with q, if anything.
func (q SeriesQuery) Check() error {
	if err := ValidateTenant(q.Tenant); err != nil {
		return err
	}
	if q.Step < time.Second || q.Buckets < 1 || q.Buckets > MaxSeriesBuckets {
		return fmt.Errorf("ledger: series of %d intervals of %s: want 1 to %d intervals of at least 1s", q.Buckets, q.Step, MaxSeriesBuckets)
	}
	return nil
}

// LatencyBounds are the upper bounds of the latency classes of
// Series.Latency; a last class holds everything slower.
var LatencyBounds = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute,
}

// SeriesCount is the number of events of one interval, tool and outcome.
type SeriesCount struct {
	Bucket     int
	Tool       string
	Outcome    Outcome
	Calls      int64
	Duplicates int64 // of them, answered from an earlier record (Event.Duplicate)
}

// SeriesLatency is the number of events of one interval whose latency is
// in one class: at most LatencyBounds[Class], or above the last bound when
// Class is len(LatencyBounds).
type SeriesLatency struct {
	Bucket int
	Class  int
	Calls  int64
}

// Series is what EventSeries returns: counts in no particular order.
type Series struct {
	Counts  []SeriesCount
	Latency []SeriesLatency
}

// LatencyClass is the class of d in LatencyBounds.
func LatencyClass(d time.Duration) int {
	for i, b := range LatencyBounds {
		if d <= b {
			return i
		}
	}
	return len(LatencyBounds)
}

// LatencyQuantile is the upper bound of the class that holds quantile p of
// a histogram counts (indexed by class), by nearest rank; the slowest class
// reads as twice the last bound. Zero when counts are all zero.
func LatencyQuantile(p float64, counts []int64) time.Duration {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank, seen := NearestRank(p, n), int64(0)
	for class, c := range counts {
		seen += c
		if seen >= rank {
			if class < len(LatencyBounds) {
				return LatencyBounds[class]
			}
			break
		}
	}
	return 2 * LatencyBounds[len(LatencyBounds)-1]
}

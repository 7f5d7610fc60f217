package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/wire"
)

// slice is one contender's turn in one scenario: clients connect, make
// calls for a while, and leave.
type slice struct {
	urls     []string // the contender's endpoints; client i uses urls[i%len]
	clients  int
	hot      int // of the clients, how many call the one hot key
	rate     float64
	duration time.Duration
	// prefix starts every key of the slice: the payments with it are what
	// this slice paid.
	prefix string
	procs  []*proc // the front: whose RSS is sampled
	// upstream, for a proxy, is the server behind it (nil otherwise): its
	// CPU is counted with the slice's.
	upstream *proc
}

// tally is what one class of calls (new keys, or the hot key) got.
type tally struct {
	lat    []time.Duration // every answered call's, ok or not
	ok     int
	errs   map[string]int // error text (cut short) -> calls
	okKeys []string       // keys answered with a result
	shed   int            // fixed rate: arrivals not sent, every session busy
	// elapsed is from the first call to the last answer.
	elapsed time.Duration
}

func (t *tally) add(o *tally) {
	t.lat = append(t.lat, o.lat...)
	t.ok += o.ok
	for k, n := range o.errs {
		if t.errs == nil {
			t.errs = map[string]int{}
		}
		t.errs[k] += n
	}
	t.okKeys = append(t.okKeys, o.okKeys...)
	t.shed += o.shed
	t.elapsed += o.elapsed
}

func (t *tally) errors() int {
	n := 0
	for _, v := range t.errs {
		n += v
	}
	return n
}

// sliceResult is a slice's two classes of calls and the largest RSS seen
// while it ran.
type sliceResult struct {
	fresh, hot tally
	rss        int64
	load       float64 // the one-minute load average when it began
	// cpu is the CPU time used during the calls by the clients (this
	// process), the front and the upstream behind a proxy.
	cpu cpuUse
}

// cpuUse is CPU time by role.
type cpuUse struct{ clients, front, upstream time.Duration }

func (c cpuUse) plus(o cpuUse) cpuUse {
	return cpuUse{c.clients + o.clients, c.front + o.front, c.upstream + o.upstream}
}

// cpuNow reads the CPU time used so far by each role of s.
func (s slice) cpuNow() cpuUse {
	var u cpuUse
	if v, err := cpuTime(0); err == nil {
		u.clients = v
	}
	for _, p := range s.procs {
		if v, err := cpuTime(p.cmd.Process.Pid); err == nil {
			u.front += v
		}
	}
	if s.upstream != nil {
		if v, err := cpuTime(s.upstream.cmd.Process.Pid); err == nil {
			u.upstream = v
		}
	}
	return u
}

// callTimeout bounds one call. A call cut off by it may still have paid:
// it counts as an error, and the count of payments tells whether it did.
const callTimeout = 60 * time.Second

// hotPayee receives the hot key's one payment; every other client pays
// its own payee, so no payee nears the daily limit.
const hotPayee = "hot"

// loadClient is one MCP client session of the load.
type loadClient struct {
	cs    *mcp.ClientSession
	payee string
	hot   bool
}

// newHTTPClient keeps enough idle connections per host for every client
// of a slice: the default two would make most calls dial anew, and the
// load would measure the dialling.
func newHTTPClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = conns
	return &http.Client{Transport: tr}
}

// connect opens the slice's sessions, a few at a time.
func connect(ctx context.Context, s slice, hc *http.Client) ([]*loadClient, error) {
	cls := make([]*loadClient, s.clients)
	var wg sync.WaitGroup
	errs := make([]error, s.clients)
	gate := make(chan struct{}, 16)
	for i := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gate <- struct{}{}
			defer func() { <-gate }()
			c := mcp.NewClient(&mcp.Implementation{Name: "loadbench", Version: "v1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls[i%len(s.urls)], HTTPClient: hc}, nil)
			if err != nil {
				errs[i] = fmt.Errorf("loadbench: client %d: connect %s: %w", i, s.urls[i%len(s.urls)], err)
				return
			}
			cls[i] = &loadClient{cs: cs, payee: fmt.Sprintf("payee-%d", i), hot: i < s.hot}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(cls)
		return nil, err
	}
	return cls, nil
}

func closeAll(cls []*loadClient) {
	var wg sync.WaitGroup
	for _, c := range cls {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.cs.Close() // the session's end; nothing to do if it failed
		}()
	}
	wg.Wait()
}

// pay makes one create_payment call with key and records its answer.
func (c *loadClient) pay(ctx context.Context, key string, t *tally, since time.Time) {
	payee := c.payee
	if c.hot {
		payee = hotPayee
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.cs.CallTool(cctx, &mcp.CallToolParams{
		Meta:      mcp.Meta{wire.MetaKey: key},
		Name:      payments.ToolCreate,
		Arguments: map[string]any{"amount_cents": 100, "currency": "EUR", "payee": payee, "memo": "loadbench"},
	})
	t.lat = append(t.lat, time.Since(since))
	switch {
	case err != nil:
		t.fail(errText(err))
	case res.IsError:
		t.fail("isError: " + firstText(res))
	default:
		t.ok++
		t.okKeys = append(t.okKeys, key)
	}
}

func (t *tally) fail(kind string) {
	if t.errs == nil {
		t.errs = map[string]int{}
	}
	t.errs[kind]++
}

// errText names an error by its JSON-RPC code and reason where it has
// them, else by its text cut short.
func errText(err error) string {
	if je, ok := errs.AsType[*jsonrpc.Error](err); ok {
		return fmt.Sprintf("%d %s", je.Code, short(je.Message, 70))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", callTimeout)
	}
	return short(err.Error(), 80)
}

func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return short(t.Text, 70)
		}
	}
	return "(no text)"
}

func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// run makes the slice's calls: closed loop (each client calls again as
// soon as it is answered) or, with a rate, new-key calls at fixed
// intervals spread over the clients, each timed from when it was due.
func (s slice) run(ctx context.Context, hc *http.Client) (sliceResult, error) {
	cls, err := connect(ctx, s, hc)
	if err != nil {
		return sliceResult{}, err
	}
	defer func() {
		closeAll(cls)
		// Idle keep-alive connections would hold a goroutine and buffers
		// in the server through the other contenders' slices.
		hc.CloseIdleConnections()
	}()
	// One call each before the clock starts: a proxy connects its
	// upstream session at a host session's first call. Warm-up calls
	// count as paid like any other.
	warm := make([]tally, len(cls))
	var wg sync.WaitGroup
	for i, c := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.pay(ctx, s.key(c, i, 0), &warm[i], time.Now())
		}()
	}
	wg.Wait()
	res := sliceResult{load: loadAverage()}
	for i, w := range warm {
		t := &res.fresh
		if cls[i].hot {
			t = &res.hot
		}
		t.okKeys = append(t.okKeys, w.okKeys...)
		for k, n := range w.errs {
			t.errs = mergeCount(t.errs, "warm-up: "+k, n)
		}
	}

	stopRSS := s.sampleRSS(&res.rss)
	cpu0 := s.cpuNow()
	start := time.Now()
	var fresh, hot []tally
	if s.rate > 0 {
		fresh = []tally{s.fixedRate(ctx, cls, start)}
	} else {
		fresh, hot = s.closedLoop(ctx, cls, start)
	}
	elapsed := time.Since(start)
	cpu1 := s.cpuNow()
	res.cpu = cpuUse{cpu1.clients - cpu0.clients, cpu1.front - cpu0.front, cpu1.upstream - cpu0.upstream}
	stopRSS()
	for _, t := range fresh {
		res.fresh.add(&t)
	}
	for _, t := range hot {
		res.hot.add(&t)
	}
	res.fresh.elapsed, res.hot.elapsed = elapsed, elapsed
	return res, nil
}

func mergeCount(m map[string]int, k string, n int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k] += n
	return m
}

// key is the n-th key of client i; the hot clients share one.
func (s slice) key(c *loadClient, i, n int) string {
	if c.hot {
		return s.prefix + "hot"
	}
	return fmt.Sprintf("%sc%d.%d", s.prefix, i, n)
}

func (s slice) closedLoop(ctx context.Context, cls []*loadClient, start time.Time) (fresh, hot []tally) {
	deadline := start.Add(s.duration)
	per := make([]tally, len(cls))
	var wg sync.WaitGroup
	for i, c := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				c.pay(ctx, s.key(c, i, n), &per[i], time.Now())
			}
		}()
	}
	wg.Wait()
	for i, c := range cls {
		if c.hot {
			hot = append(hot, per[i])
		} else {
			fresh = append(fresh, per[i])
		}
	}
	return fresh, hot
}

// fixedRate sends new-key calls at s.rate per second for s.duration. A
// call that comes due while its client is still busy goes to the next
// idle one; when none is idle the arrival is shed (counted, not sent).
func (s slice) fixedRate(ctx context.Context, cls []*loadClient, start time.Time) tally {
	var (
		mu  sync.Mutex // guards t
		t   tally
		wg  sync.WaitGroup
		seq atomic.Int64
	)
	idle := make(chan int, len(cls))
	for i := range cls {
		idle <- i
	}
	interval := time.Duration(float64(time.Second) / s.rate)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for due := start; due.Before(start.Add(s.duration)) && ctx.Err() == nil; due = due.Add(interval) {
		timer.Reset(time.Until(due))
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		var i int
		select {
		case i = <-idle:
		default:
			mu.Lock()
			t.shed++
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var one tally
			cls[i].pay(ctx, s.key(cls[i], i, int(seq.Add(1))), &one, due)
			idle <- i
			mu.Lock()
			t.add(&one)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return t
}

// sampleRSS records the largest RSS of the slice's processes every 100ms
// until the returned function is called.
func (s slice) sampleRSS(into *int64) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, p := range s.procs {
				if v, err := p.rss(); err == nil && v > *into {
					*into = v
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

package telemetry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/ledgertest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/telemetry"
)

// want is one expected figure: the total of instrument name (a counter's
// sum, a histogram's count) over the data points that match every "k=v"
// ("k=" means the attribute is absent).
type want struct {
	name  string
	match []string
	total float64
}

// instruments is every instrument a scenario checks: one that a scenario
// does not name must not move at all.
var instruments = []string{
	telemetry.MetricCalls, telemetry.MetricDuplicateHits, telemetry.MetricKeyConflicts,
	telemetry.MetricInProgressWaits, telemetry.MetricInProgressTimeouts, telemetry.MetricUnknown,
	telemetry.MetricDownstreamDuplicates, telemetry.MetricReplayDuration, telemetry.MetricAttempts,
}

const key = "order-1"

func keyed() context.Context { return client.WithKey(context.Background(), key) }

func mustCall(t *testing.T, c *client.Client, ctx context.Context, amount int) *client.Outcome {
	t.Helper()
	o, err := c.Call(ctx, pay(amount, "bob"))
	if err != nil {
		t.Fatalf("Call(pay %d) = %v; want success", amount, err)
	}
	return o
}

func callErr(t *testing.T, c *client.Client, ctx context.Context, amount int, target error) {
	t.Helper()
	if _, err := c.Call(ctx, pay(amount, "bob")); !errors.Is(err, target) {
		t.Fatalf("Call(pay %d) = %v; want %v", amount, err, target)
	}
}

// blockPay makes pay wait for release; started is closed when the first
// run begins.
func blockPay(r *rig) (started <-chan struct{}, release chan<- struct{}) {
	s, rel := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.setHandler(func(context.Context, *mcp.CallToolRequest) error {
		once.Do(func() { close(s) })
		<-rel
		return nil
	})
	return s, rel
}

// inBackground runs the first call of key through the rig's client, and
// returns a wait for its result.
func inBackground(t *testing.T, r *rig) (wait func()) {
	done := make(chan error, 1)
	go func() {
		_, err := r.client.Call(keyed(), pay(5, "bob"))
		done <- err
	}()
	return func() {
		t.Helper()
		if err := <-done; err != nil {
			t.Fatalf("first Call = %v; want success", err)
		}
	}
}

// signalWait is the client ledger with a signal each time a follower
// starts waiting in it.
type signalWait struct {
	*sqlite.Store
	waiting chan struct{}
}

func (s signalWait) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	select {
	case s.waiting <- struct{}{}:
	default:
	}
	return s.Store.Wait(ctx, id)
}

func TestInstruments(t *testing.T) {
	cases := []struct {
		name string
		opts func() *rigOptions
		run  func(t *testing.T, r *rig)
		want []want
	}{
		{
			name: "fresh call",
			run:  func(t *testing.T, r *rig) { mustCall(t, r.client, keyed(), 5) },
			want: []want{
				{telemetry.MetricCalls, []string{"gen_ai.tool.name=pay", "mcpledger.side=client", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"gen_ai.tool.name=pay", "mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricAttempts, []string{"gen_ai.tool.name=pay", "mcpledger.side=client"}, 1},
			},
		},
		{
			name: "tool error",
			run: func(t *testing.T, r *rig) {
				r.setHandler(func(context.Context, *mcp.CallToolRequest) error { return errors.New("insufficient funds") })
				if o := mustCall(t, r.client, keyed(), 5); !o.Result.IsError {
					t.Fatalf("Call = %+v; want an isError result", o.Result)
				}
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=failed"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=failed"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 1},
			},
		},
		{
			name: "replay from the client ledger",
			run: func(t *testing.T, r *rig) {
				mustCall(t, r.client, keyed(), 5)
				if o := mustCall(t, r.client, keyed(), 5); !o.Replayed {
					t.Fatalf("second Call Replayed = false; want true")
				}
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=replayed"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricDuplicateHits, []string{"gen_ai.tool.name=pay", "mcpledger.side=client", "mcpledger.state=SUCCEEDED"}, 1},
				{telemetry.MetricReplayDuration, []string{"gen_ai.tool.name=pay", "mcpledger.side=client"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 1},
			},
		},
		{
			name: "server stops a duplicate from another agent",
			run: func(t *testing.T, r *rig) {
				mustCall(t, r.client, keyed(), 5)
				other := r.newClient(openStore(t, nil), nil)
				mustCall(t, other, keyed(), 5)
				if n := r.runs.Load(); n != 1 {
					t.Fatalf("pay ran %d times; want 1", n)
				}
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=succeeded"}, 2},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=replayed"}, 1},
				{telemetry.MetricDuplicateHits, []string{"mcpledger.side=server", "mcpledger.state=SUCCEEDED"}, 1},
				{telemetry.MetricDownstreamDuplicates, []string{"gen_ai.tool.name=pay", "mcpledger.side=server", "mcpledger.reason=replayed"}, 1},
				{telemetry.MetricReplayDuration, []string{"mcpledger.side=server"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 2},
			},
		},
		{
			name: "key conflict at the client",
			run: func(t *testing.T, r *rig) {
				mustCall(t, r.client, keyed(), 5)
				callErr(t, r.client, keyed(), 6, ledger.ErrKeyReused)
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=key_conflict"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricKeyConflicts, []string{"gen_ai.tool.name=pay", "mcpledger.side=client"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 1},
			},
		},
		{
			name: "key conflict at the server",
			run: func(t *testing.T, r *rig) {
				mustCall(t, r.client, keyed(), 5)
				callErr(t, r.newClient(openStore(t, nil), nil), keyed(), 6, ledger.ErrKeyReused)
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=key_conflict"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=key_conflict"}, 1},
				{telemetry.MetricKeyConflicts, []string{"mcpledger.side=client"}, 1},
				{telemetry.MetricKeyConflicts, []string{"mcpledger.side=server"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 2},
			},
		},
		{
			name: "client waits for another agent's execution and gets its result",
			run: func(t *testing.T, r *rig) {
				started, release := blockPay(r)
				wait := inBackground(t, r)
				<-started
				sw := signalWait{Store: r.cstore, waiting: make(chan struct{}, 1)}
				follower := r.newClient(sw, nil)
				got := make(chan *client.Outcome, 1)
				go func() { got <- mustCall(t, follower, keyed(), 5) }()
				<-sw.waiting
				close(release)
				wait()
				if o := <-got; !o.Replayed {
					t.Fatalf("follower Replayed = false; want true")
				}
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=replayed"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricInProgressWaits, []string{"gen_ai.tool.name=pay", "mcpledger.side=client"}, 1},
				{telemetry.MetricDuplicateHits, []string{"mcpledger.side=client"}, 1},
				{telemetry.MetricReplayDuration, []string{"mcpledger.side=client"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 1},
			},
		},
		{
			name: "client gives up waiting",
			run: func(t *testing.T, r *rig) {
				started, release := blockPay(r)
				wait := inBackground(t, r)
				<-started
				follower := r.newClient(r.cstore, &client.Options{InProgressWait: 20 * time.Millisecond})
				callErr(t, follower, keyed(), 5, ledger.ErrInProgress)
				close(release)
				wait()
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=in_progress"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricInProgressWaits, []string{"mcpledger.side=client"}, 1},
				{telemetry.MetricInProgressTimeouts, []string{"gen_ai.tool.name=pay", "mcpledger.side=client"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 1},
			},
		},
		{
			name: "server answers in progress to another agent",
			run: func(t *testing.T, r *rig) {
				started, release := blockPay(r)
				wait := inBackground(t, r)
				<-started
				// The rig's retry policy makes two attempts; each waits out
				// the server's 100ms bound.
				callErr(t, r.newClient(openStore(t, nil), nil), keyed(), 5, client.ErrNotSent)
				close(release)
				wait()
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=not_sent"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=succeeded"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=in_progress"}, 2},
				{telemetry.MetricInProgressWaits, []string{"mcpledger.side=server"}, 2},
				{telemetry.MetricInProgressTimeouts, []string{"mcpledger.side=server"}, 2},
				{telemetry.MetricDownstreamDuplicates, []string{"mcpledger.side=server", "mcpledger.reason=in_progress"}, 2},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 2},
			},
		},
		{
			name: "handler panics: both ledgers enter UNKNOWN",
			run: func(t *testing.T, r *rig) {
				r.setHandler(func(context.Context, *mcp.CallToolRequest) error { panic("boom") })
				callErr(t, r.client, keyed(), 5, client.ErrOutcomeUnknown)
				// The repeat re-sends the UNKNOWN call to the key-aware
				// server to reconcile it; the server answers -31003 again.
				callErr(t, r.client, keyed(), 5, client.ErrOutcomeUnknown)
				callErr(t, r.newClient(openStore(t, nil), nil), keyed(), 5, client.ErrOutcomeUnknown)
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=unknown"}, 3},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=unknown"}, 3},
				{telemetry.MetricUnknown, []string{"gen_ai.tool.name=pay", "mcpledger.side=server", "mcpledger.reason=panic"}, 1},
				{telemetry.MetricUnknown, []string{"gen_ai.tool.name=pay", "mcpledger.side=client", "mcpledger.reason=server_outcome_unknown"}, 3},
				{telemetry.MetricDownstreamDuplicates, []string{"mcpledger.side=server", "mcpledger.reason=unknown"}, 2},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 3},
			},
		},
		{
			name: "sweep finds a dead owner's lease",
			opts: func() *rigOptions { return &rigOptions{clock: ledgertest.NewClock(ledgertest.Start)} },
			run: func(t *testing.T, r *rig) {
				_, err := r.sstore.Claim(context.Background(), ledger.ClaimRequest{
					ID:          ledger.ID{Layer: ledger.LayerServer, Tenant: tenant, Tool: "pay", Key: key},
					Fingerprint: "fp", Owner: "dead-process", Lease: time.Second,
				})
				if err != nil {
					t.Fatalf("Claim = %v", err)
				}
				r.clock.Advance(2 * time.Second)
				if expired, _ := r.guard.Sweep(context.Background()); expired != 1 {
					t.Fatalf("Sweep expired %d records; want 1", expired)
				}
			},
			want: []want{
				{telemetry.MetricUnknown, []string{"mcpledger.side=server", "mcpledger.reason=lease_expired", "gen_ai.tool.name="}, 1},
			},
		},
		{
			name: "a duplicate finds a dead owner's lease",
			opts: func() *rigOptions { return &rigOptions{server: &server.Options{InProgressWait: time.Minute}} },
			run: func(t *testing.T, r *rig) {
				fp, err := args.Fingerprint([]byte(`{"amount":5,"payee":"bob"}`))
				if err != nil {
					t.Fatal(err)
				}
				// A server process that claimed the key and died: its lease
				// runs out while the duplicate waits.
				_, err = r.sstore.Claim(context.Background(), ledger.ClaimRequest{
					ID:          ledger.ID{Layer: ledger.LayerServer, Tenant: tenant, Tool: "pay", Key: key},
					Fingerprint: fp, Owner: "dead-process", Lease: time.Second,
				})
				if err != nil {
					t.Fatalf("Claim = %v", err)
				}
				callErr(t, r.client, keyed(), 5, client.ErrOutcomeUnknown)
				if n := r.runs.Load(); n != 0 {
					t.Fatalf("pay ran %d times; want 0", n)
				}
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=unknown"}, 1},
				{telemetry.MetricCalls, []string{"mcpledger.side=server", "mcpledger.outcome=unknown"}, 1},
				{telemetry.MetricInProgressWaits, []string{"mcpledger.side=server"}, 1},
				{telemetry.MetricUnknown, []string{"mcpledger.side=server", "mcpledger.reason=lease_expired", "gen_ai.tool.name="}, 1},
				{telemetry.MetricUnknown, []string{"mcpledger.side=client", "mcpledger.reason=server_outcome_unknown"}, 1},
				{telemetry.MetricDownstreamDuplicates, []string{"mcpledger.side=server", "mcpledger.reason=unknown"}, 1},
				{telemetry.MetricAttempts, []string{"mcpledger.side=client"}, 1},
			},
		},
		{
			name: "invalid key",
			run: func(t *testing.T, r *rig) {
				callErr(t, r.client, client.WithKey(context.Background(), "not a key"), 5, ledger.ErrInvalidKey)
			},
			want: []want{
				{telemetry.MetricCalls, []string{"mcpledger.side=client", "mcpledger.outcome=invalid"}, 1},
			},
		},
		{
			name: "read-only tool bypasses the ledger",
			opts: func() *rigOptions {
				return &rigOptions{client: &client.Options{Tools: ledger.Tools{"lookup": {ReadOnly: true}}}}
			},
			run: func(t *testing.T, r *rig) {
				if _, err := r.client.Call(context.Background(), &mcp.CallToolParams{Name: "lookup"}); err != nil {
					t.Fatalf("Call(lookup) = %v", err)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ro *rigOptions
			if c.opts != nil {
				ro = c.opts()
			}
			r := newRig(t, ro)
			c.run(t, r)
			for _, name := range instruments {
				var all float64
				for _, w := range c.want {
					if w.name != name {
						continue
					}
					all += w.total
					if got := r.total(name, w.match...); got != w.total {
						t.Errorf("%s%v = %v; want %v", name, w.match, got, w.total)
					}
				}
				if got := r.total(name); got != all {
					t.Errorf("%s over all attributes = %v; want %v", name, got, all)
				}
			}
		})
	}
}

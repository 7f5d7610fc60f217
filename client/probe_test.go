package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// shop is an MCP server that does not honour keys: pay runs every time it
// is called and remembers the key it was called with; find answers from
// what pay remembered, as a probe expects.
type shop struct {
	mu   sync.Mutex
	paid map[string]string // key -> payment id; guarded by mu
	pays atomic.Int32      // pay's executions
	// findFails makes find answer with a protocol error.
	findFails atomic.Bool
	// findHangs makes find wait until its request is cancelled.
	findHangs atomic.Bool
	finds     atomic.Int32
}

var objectSchema = map[string]any{"type": "object"}

func newShop() *shop { return &shop{paid: map[string]string{}} }

func (s *shop) server() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := s.pays.Add(1)
		key, _ := req.Params.Meta[client.MetaKey].(string)
		id := fmt.Sprintf("pay_%d", n)
		s.mu.Lock()
		s.paid[key] = id
		s.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid " + id}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "find", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.finds.Add(1)
			if s.findHangs.Load() {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			if s.findFails.Load() {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "find: database down"}
			}
			var in struct {
				Ref string `json:"ref"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			s.mu.Lock()
			id, ok := s.paid[in.Ref]
			s.mu.Unlock()
			if !ok {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no payment " + in.Ref}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid " + id}}}, nil
		})
	return srv
}

// pretendPaid is a payment made under key that the ledger never heard of.
func (s *shop) pretendPaid(key, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paid[key] = id
}

// probeClient is a client of a fresh shop over in-memory transports, with
// a policy that probes pay with find, and a clock the test moves.
type probeClient struct {
	shop  *shop
	store *sqlite.Store
	c     *client.Client
	clock *atomic.Int64 // nanoseconds added to the real time
}

func newProbeClient(t testing.TB, policy string, tune ...func(*client.Options)) *probeClient {
	t.Helper()
	pol, err := confirm.Parse([]byte(policy))
	if err != nil {
		t.Fatalf("confirm.Parse = %v", err)
	}
	pc := &probeClient{shop: newShop(), store: openStore(t), clock: new(atomic.Int64)}
	srv := pc.shop.server()
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, ct, nil)
	}
	now := func() time.Time { return time.Now().Add(time.Duration(pc.clock.Load())) }
	opts := &client.Options{Policy: pol, Retry: fastRetry(), Now: now}
	for _, f := range tune {
		f(opts)
	}
	pc.c, err = client.Dial(context.Background(), connect, pc.store, opts)
	if err != nil {
		t.Fatalf("client.Dial = %v", err)
	}
	t.Cleanup(func() { pc.c.Close() })
	return pc
}

const probePolicy = `{"version": 1, "rules": [{"tool": "*", "action": "allow"}],
 "reconcile": [{"tool": "pay", "probe": "find", "arguments": {"ref": "{{.Key}}"}, "absent": "not_run", "quiet": "1m"}]}`

var payArgs = map[string]any{"amount": 5}

// strandUnknown leaves key UNKNOWN, as a call whose answer was lost does.
func strandUnknown(t testing.TB, st ledger.Store, key string) *ledger.Record {
	t.Helper()
	doc, err := json.Marshal(payArgs)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := args.Fingerprint(doc)
	if err != nil {
		t.Fatal(err)
	}
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "pay", Key: key}
	ctx := context.Background()
	cl, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Owner: "lost-process", Lease: time.Minute})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	rec, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown,
		Owner: "lost-process", Fence: cl.Record.Fence, ErrorKind: "ambiguous"})
	if err != nil {
		t.Fatalf("Transition to UNKNOWN = %v", err)
	}
	return rec
}

func (pc *probeClient) pay(key string) (*mcp.CallToolResult, error) {
	return pc.c.CallTool(client.WithKey(context.Background(), key), &mcp.CallToolParams{Name: "pay", Arguments: payArgs})
}

func TestProbeSettlesUnknownInline(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		paid     bool          // the lost call had taken effect
		after    time.Duration // how long after the call the next one comes
		fails    bool          // the probe answers with a protocol error
		want     ledger.State
		wantPays int32
		wantText string
	}{
		{name: "found: the probe's answer is the replay", policy: probePolicy, paid: true, want: ledger.StateSucceeded, wantText: "paid pay_lost"},
		{name: "absent within the quiet period: still unknown", policy: probePolicy, after: 59 * time.Second, want: ledger.StateUnknown},
		{name: "absent after the quiet period: runs once", policy: probePolicy, after: time.Minute, want: ledger.StateSucceeded, wantPays: 1, wantText: "paid pay_1"},
		{name: "absent, ask: left for a person", policy: `{"version":1,"rules":[{"tool":"*","action":"allow"}],
			"reconcile":[{"tool":"pay","probe":"find","arguments":{"ref":"{{.Key}}"},"absent":"ask","quiet":"1s"}]}`, after: time.Hour, want: ledger.StateUnknown},
		{name: "protocol error: unknown", policy: probePolicy, paid: true, fails: true, after: time.Hour, want: ledger.StateUnknown},
		{name: "found by a condition", policy: `{"version":1,"rules":[{"tool":"*","action":"allow"}],
			"reconcile":[{"tool":"pay","probe":"find","arguments":{"ref":"{{.Key}}"},"found":"text startsWith 'paid'"}]}`, paid: true, want: ledger.StateSucceeded, wantText: "paid pay_lost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pc := newProbeClient(t, tc.policy)
			rec := strandUnknown(t, pc.store, "k-1")
			if tc.paid {
				pc.shop.pretendPaid("k-1", "pay_lost")
			}
			pc.shop.findFails.Store(tc.fails)
			pc.clock.Store(int64(tc.after))
			res, err := pc.pay("k-1")
			after, gerr := pc.store.Get(context.Background(), rec.ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if after.State != tc.want || pc.shop.pays.Load() != tc.wantPays {
				t.Fatalf("after the call: record %s, pay ran %d times; want %s and %d (call = %v, %v)", after.State, pc.shop.pays.Load(), tc.want, tc.wantPays, res, err)
			}
			// A probe is a read: a failed one is tried again, within its budget.
			if n := pc.shop.finds.Load(); n != 1 && !tc.fails || n < 1 {
				t.Errorf("find ran %d times; want 1", n)
			}
			if len(after.Findings) == 0 || after.Findings[len(after.Findings)-1].Method != ledger.MethodProbe || after.Findings[len(after.Findings)-1].By != "find" {
				t.Errorf("findings = %+v; want the probe's, by find", after.Findings)
			}
			if tc.want == ledger.StateUnknown {
				if !errors.Is(err, client.ErrOutcomeUnknown) {
					t.Errorf("call = %v, %v; want ErrOutcomeUnknown", res, err)
				}
				return
			}
			if err != nil || res.IsError || textOf(res) != tc.wantText {
				t.Fatalf("call = %v, %v; want %q", res, err, tc.wantText)
			}
			if tc.wantPays == 0 {
				if _, ok := res.Meta[client.MetaReplay]; !ok || after.Reconciled == nil || after.Reconciled.Method != ledger.MethodProbe {
					t.Errorf("answer _meta %v, record reconciled %+v; want a replay reconciled by the probe", res.Meta, after.Reconciled)
				}
			}
			// Every later call is a plain replay: the probe is not asked again.
			again, err := pc.pay("k-1")
			if err != nil || textOf(again) != tc.wantText || pc.shop.finds.Load() != 1 || pc.shop.pays.Load() != tc.wantPays {
				t.Errorf("next call = %v, %v (finds %d, pays %d); want the replay of %q without a probe", again, err, pc.shop.finds.Load(), pc.shop.pays.Load(), tc.wantText)
			}
		})
	}
}

// A tool the policy names no probe for stays UNKNOWN, as before.
func TestNoProbeLeavesUnknown(t *testing.T) {
	pc := newProbeClient(t, `{"version":1,"rules":[{"tool":"*","action":"allow"}]}`)
	strandUnknown(t, pc.store, "k-2")
	pc.shop.pretendPaid("k-2", "pay_lost")
	if _, err := pc.pay("k-2"); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("call = %v; want ErrOutcomeUnknown", err)
	}
	if pc.shop.finds.Load() != 0 || pc.shop.pays.Load() != 0 {
		t.Errorf("find ran %d times, pay %d; want neither", pc.shop.finds.Load(), pc.shop.pays.Load())
	}
}

// Many calls of one UNKNOWN key at once, in one process: one probe, one
// answer for all, no payment.
func TestProbeOncePerKey(t *testing.T) {
	pc := newProbeClient(t, probePolicy)
	strandUnknown(t, pc.store, "k-3")
	pc.shop.pretendPaid("k-3", "pay_lost")
	var wg sync.WaitGroup
	var bad atomic.Int32
	for range 20 {
		wg.Go(func() {
			res, err := pc.pay("k-3")
			if err != nil || textOf(res) != "paid pay_lost" {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 || pc.shop.pays.Load() != 0 {
		t.Fatalf("%d calls did not get the found payment, pay ran %d times; want 0 and 0", bad.Load(), pc.shop.pays.Load())
	}
	if n := pc.shop.finds.Load(); n < 1 || n > 2 {
		// The one flight of the key, and at most a late caller's look at
		// a record another settled meanwhile.
		t.Errorf("find ran %d times; want 1", n)
	}
}

// Reconcile settles an UNKNOWN record without a call, as a background
// sweep does: found, provably not run after the quiet period, or no probe.
func TestReconcileWithoutACall(t *testing.T) {
	ctx := context.Background()
	pc := newProbeClient(t, probePolicy)
	found := strandUnknown(t, pc.store, "bg-1")
	pc.shop.pretendPaid("bg-1", "pay_lost")
	after, err := pc.c.Reconcile(ctx, found, nil)
	if err != nil || after.State != ledger.StateSucceeded {
		t.Fatalf("Reconcile(found) = %v, %v; want SUCCEEDED", after, err)
	}
	absent := strandUnknown(t, pc.store, "bg-2")
	if after, err = pc.c.Reconcile(ctx, absent, nil); err != nil || after.State != ledger.StateUnknown || after.ReconcileAt.IsZero() {
		t.Fatalf("Reconcile(absent, within the quiet period) = %v, %v; want UNKNOWN with a next attempt due", after, err)
	}
	pc.clock.Store(int64(time.Minute))
	if after, err = pc.c.Reconcile(ctx, after, nil); err != nil || after.State != ledger.StateRetryable {
		t.Fatalf("Reconcile(absent, after the quiet period) = %v, %v; want RETRYABLE", after, err)
	}
	if pc.shop.pays.Load() != 0 {
		t.Errorf("pay ran %d times; want 0 (Reconcile never runs the call)", pc.shop.pays.Load())
	}
	none := newProbeClient(t, `{"version":1,"rules":[{"tool":"*","action":"allow"}]}`)
	if _, err := none.c.Reconcile(ctx, strandUnknown(t, none.store, "bg-3"), nil); !errors.Is(err, client.ErrNoProbe) {
		t.Errorf("Reconcile without a probe = %v; want ErrNoProbe", err)
	}
}

// A probe that does not answer is cut off at its budget: the call answers
// UNKNOWN, and the record keeps the attempt.
func TestProbeBudget(t *testing.T) {
	pc := newProbeClient(t, probePolicy, func(o *client.Options) { o.ProbeBudget = 50 * time.Millisecond })
	rec := strandUnknown(t, pc.store, "k-4")
	pc.shop.findHangs.Store(true)
	if _, err := pc.pay("k-4"); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("call = %v; want ErrOutcomeUnknown", err)
	}
	after, err := pc.store.Get(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != ledger.StateUnknown || len(after.Findings) != 1 || after.Findings[0].Verdict != ledger.VerdictUnknown {
		t.Errorf("record = %s, findings %+v; want UNKNOWN with the probe's unanswered attempt", after.State, after.Findings)
	}
	if pc.shop.pays.Load() != 0 {
		t.Errorf("pay ran %d times; want 0", pc.shop.pays.Load())
	}
}

package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/retry"
)

func TestExplicitKeyRepeatedIsReplayedByteForByte(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := client.WithKey(context.Background(), "order-1")
	first, err := f.c.Call(ctx, write("a", 10))
	if err != nil {
		t.Fatalf("first Call = %v", err)
	}
	if first.Replayed {
		t.Fatalf("first Call Replayed = true; want false")
	}
	second, err := f.c.Call(ctx, write("a", 10))
	if err != nil {
		t.Fatalf("second Call = %v", err)
	}
	if !second.Replayed {
		t.Fatalf("second Call Replayed = false; want true")
	}
	if n := f.srv.Executions("order-1"); n != 1 {
		t.Fatalf("Executions(order-1) = %d; want 1", n)
	}
	marker, ok := second.Result.Meta[client.MetaReplay].(client.ReplayMarker)
	if !ok || marker.Key != "order-1" || marker.State != ledger.StateSucceeded {
		t.Fatalf("replay marker = %#v; want key order-1, SUCCEEDED", second.Result.Meta[client.MetaReplay])
	}
	delete(second.Result.Meta, client.MetaReplay)
	if len(second.Result.Meta) == 0 {
		second.Result.Meta = nil
	}
	got, err := json.Marshal(second.Result)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(first.Result)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("replayed result = %s; want %s", got, want)
	}
	if stored := record(t, f.store, "write", "order-1").Result; string(stored) != string(want) {
		t.Fatalf("stored result = %s; want %s", stored, want)
	}
}

func TestKeyTravelsInMetaAndDeclaredArgument(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := client.WithKey(context.Background(), "k-arg")
	p := write("a", 1)
	if _, err := f.c.CallTool(ctx, p); err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	if p.Meta != nil {
		t.Fatalf("caller's params were modified: Meta = %v", p.Meta)
	}
	if args := p.Arguments.(map[string]any); len(args) != 2 {
		t.Fatalf("caller's arguments were modified: %v", args)
	}
	nokey := &mcp.CallToolParams{Name: "write_nokey", Arguments: map[string]any{"id": "b", "amount": 2}}
	// write_nokey rejects an idempotency_key argument with -32602, so
	// success proves the argument is filled only when declared.
	if _, err := f.c.CallTool(client.WithKey(context.Background(), "k-nokey"), nokey); err != nil {
		t.Fatalf("CallTool(write_nokey) = %v", err)
	}
	if n := f.srv.Executions("k-nokey"); n != 1 {
		t.Fatalf("Executions(k-nokey) = %d; want 1 (key must travel in _meta)", n)
	}
}

// Fifty identical calls at once run once: under a chain (one derived
// key), and without a key, where the re-planning guard decides for all of
// them at once instead of each finding no earlier call.
func TestConcurrentIdenticalCallsShareOneExecution(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"chain", client.WithChain(context.Background(), "chain-50")},
		{"re-planned without a key", context.Background()},
	} {
		t.Run(tc.name, func(t *testing.T) { concurrentIdenticalCalls(t, tc.ctx) })
	}
}

func concurrentIdenticalCalls(t *testing.T, ctx context.Context) {
	f := newFixture(t, nil, nil)
	const n = 50
	var wg sync.WaitGroup
	var failures, fresh atomic.Int32
	results := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := f.c.Call(ctx, write("same", 5))
			if err != nil {
				failures.Add(1)
				t.Errorf("Call %d = %v", i, err)
				return
			}
			// Every caller but the one that ran it gets a replay, marked,
			// whether it shared the execution in flight or read the record.
			_, marked := o.Result.Meta[client.MetaReplay]
			switch {
			case !o.Replayed && !marked:
				fresh.Add(1)
			case o.Replayed != marked:
				t.Errorf("Call %d: Replayed = %v, marker on the result = %v", i, o.Replayed, marked)
			}
			r := *o.Result
			r.Meta = nil // a replay marker is allowed to differ
			b, err := json.Marshal(&r)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = string(b)
		}()
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.FailNow()
	}
	if got := f.srv.TotalExecutions(); got != 1 {
		t.Fatalf("TotalExecutions = %d; want 1", got)
	}
	if got := fresh.Load(); got != 1 {
		t.Errorf("%d callers got an unmarked, fresh result; want 1 (the one that ran it)", got)
	}
	for i := 1; i < n; i++ {
		if results[i] != results[0] {
			t.Fatalf("result %d = %s; want %s", i, results[i], results[0])
		}
	}
}

// Callers that join an execution in flight in this process did not run
// the call: each is answered as a replay, with the marker on its result,
// as a caller that read the finished record is.
func TestWaitersOfASharedExecutionGetAReplay(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Script(mcptest.Fault{Kind: mcptest.KindStallAfterExecute, StallMs: 1000})
	ctx := client.WithKey(context.Background(), "shared-1")
	first := make(chan *client.Outcome, 1)
	go func() {
		o, err := f.c.Call(ctx, write("shared", 5))
		if err != nil {
			t.Errorf("the first Call = %v", err)
		}
		first <- o
	}()
	<-f.srv.Stalled() // the first call ran and holds the flight
	const n = 20
	var wg sync.WaitGroup
	var unmarked atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := f.c.Call(ctx, write("shared", 5))
			if err != nil {
				t.Errorf("Call = %v", err)
				return
			}
			if _, marked := o.Result.Meta[client.MetaReplay]; !marked || !o.Replayed || o.Attempts != 0 {
				unmarked.Add(1)
			}
		}()
	}
	wg.Wait()
	if o := <-first; o == nil || o.Replayed {
		t.Fatalf("the first Call = %+v; want the execution itself", o)
	}
	if got := unmarked.Load(); got != 0 {
		t.Errorf("%d of %d repeats got no replay marker", got, n)
	}
	if got := f.srv.Executions("shared-1"); got != 1 {
		t.Errorf("Executions = %d; want 1", got)
	}
}

func TestReplannedCallWithoutKeyIsReplayed(t *testing.T) {
	f := newFixture(t, nil, &client.Options{Session: "agent-1"})
	first, err := f.c.Call(context.Background(), write("plan", 3))
	if err != nil {
		t.Fatalf("first Call = %v", err)
	}
	// The model lost the answer and asks again, with the arguments spelled
	// differently: same operation.
	again := &mcp.CallToolParams{Name: "write", Arguments: json.RawMessage(`{ "amount": 3.0, "id": "plan" }`)}
	second, err := f.c.Call(context.Background(), again)
	if err != nil {
		t.Fatalf("re-planned Call = %v", err)
	}
	if !second.Replayed || second.Key != first.Key {
		t.Fatalf("re-planned Call = replayed %v key %q; want replay of key %q", second.Replayed, second.Key, first.Key)
	}
	if got := f.srv.TotalExecutions(); got != 1 {
		t.Fatalf("TotalExecutions = %d; want 1", got)
	}
	// A caller that truly wants a second effect asks for a new key.
	third, err := f.c.Call(client.WithNewKey(context.Background()), write("plan", 3))
	if err != nil {
		t.Fatalf("Call(WithNewKey) = %v", err)
	}
	if third.Replayed || third.Key == first.Key {
		t.Fatalf("Call(WithNewKey) replayed %v key %q; want a new execution", third.Replayed, third.Key)
	}
	if got := f.srv.TotalExecutions(); got != 2 {
		t.Fatalf("TotalExecutions = %d; want 2", got)
	}
}

func TestKeyReusedWithOtherArguments(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := client.WithKey(context.Background(), "reuse")
	if _, err := f.c.Call(ctx, write("a", 1)); err != nil {
		t.Fatalf("Call = %v", err)
	}
	_, err := f.c.Call(ctx, write("a", 2))
	if !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("Call(other args) = %v; want ErrKeyReused", err)
	}
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Key != "reuse" || ce.Text == "" {
		t.Fatalf("Call(other args) error = %#v; want *client.Error with key and text", err)
	}
	if got := f.srv.Executions("reuse"); got != 1 {
		t.Fatalf("Executions(reuse) = %d; want 1", got)
	}
}

func TestTransientErrorsRetriedWithSameKey(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Script(mcptest.FailTransient(2).WithRetryAfter(time.Millisecond))
	o, err := f.c.Call(client.WithKey(context.Background(), "flaky"), write("a", 1))
	if err != nil {
		t.Fatalf("Call = %v", err)
	}
	if o.Attempts != 3 {
		t.Fatalf("Attempts = %d; want 3", o.Attempts)
	}
	seen := f.srv.KeysSeen()
	if len(seen) != 3 {
		t.Fatalf("KeysSeen = %v; want 3 attempts", seen)
	}
	for _, k := range seen {
		if k != "flaky" {
			t.Fatalf("KeysSeen = %v; want the same key on every attempt", seen)
		}
	}
	if got := f.srv.Executions("flaky"); got != 1 {
		t.Fatalf("Executions = %d; want 1", got)
	}
	if r := record(t, f.store, "write", "flaky"); r.Attempts != 3 || r.State != ledger.StateSucceeded {
		t.Fatalf("record = %s attempts %d; want SUCCEEDED after 3", r.State, r.Attempts)
	}
}

func TestPermanentErrorAttemptedOnce(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Script(mcptest.ProtocolError(-32602))
	_, err := f.c.Call(client.WithKey(context.Background(), "bad"), write("a", 1))
	if err == nil {
		t.Fatal("Call = nil error; want the -32602 rejection")
	}
	if seen := f.srv.KeysSeen(); len(seen) != 1 {
		t.Fatalf("KeysSeen = %v; want one attempt", seen)
	}
	if r := record(t, f.store, "write", "bad"); r.State != ledger.StateRejected {
		t.Fatalf("record state = %s; want REJECTED (nothing ran)", r.State)
	}
	// Nothing ran, so the key is not spent: the next call sends it again.
	if _, err := f.c.Call(client.WithKey(context.Background(), "bad"), write("a", 1)); err != nil {
		t.Fatalf("Call after the rejection = %v; want it sent again and run", err)
	}
	if seen := f.srv.KeysSeen(); len(seen) != 2 {
		t.Fatalf("KeysSeen after the second call = %v; want two attempts", seen)
	}
}

func TestToolErrorIsResultRecordedFailedAndReplayed(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Script(mcptest.ToolError())
	ctx := client.WithKey(context.Background(), "tool-error")
	res, err := f.c.CallTool(ctx, write("a", 1))
	if err != nil {
		t.Fatalf("CallTool = %v; a tool error is a result", err)
	}
	if !res.IsError {
		t.Fatal("IsError = false; want true")
	}
	if r := record(t, f.store, "write", "tool-error"); r.State != ledger.StateFailed {
		t.Fatalf("record state = %s; want FAILED", r.State)
	}
	o, err := f.c.Call(ctx, write("a", 1))
	if err != nil || !o.Replayed || !o.Result.IsError {
		t.Fatalf("repeat = %+v, %v; want a replayed tool error", o, err)
	}
	if got := f.srv.Executions("tool-error"); got != 1 {
		t.Fatalf("Executions = %d; want 1", got)
	}
}

func TestLostResponse(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idempotent bool
		wantState  ledger.State
	}{
		{"server without capability ends UNKNOWN", false, ledger.StateUnknown},
		{"key-aware server is retried", true, ledger.StateSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &mcptest.Options{Idempotent: tc.idempotent}, nil)
			f.srv.Script(mcptest.DropAfterExecute())
			_, err := f.c.Call(client.WithKey(context.Background(), "lost"), write("a", 1))
			if tc.wantState == ledger.StateUnknown {
				if !errors.Is(err, client.ErrOutcomeUnknown) {
					t.Fatalf("Call = %v; want ErrOutcomeUnknown", err)
				}
				var ce *client.Error
				if !errors.As(err, &ce) || ce.Key != "lost" {
					t.Fatalf("error %v does not carry the key", err)
				}
			} else if err != nil {
				t.Fatalf("Call = %v; want success after retry", err)
			}
			if got := f.srv.Executions("lost"); got != 1 {
				t.Fatalf("Executions = %d; want 1", got)
			}
			if r := record(t, f.store, "write", "lost"); r.State != tc.wantState {
				t.Fatalf("record state = %s; want %s", r.State, tc.wantState)
			}
			// Repeating the call never runs it again.
			if _, err := f.c.Call(client.WithKey(context.Background(), "lost"), write("a", 1)); tc.wantState == ledger.StateUnknown && !errors.Is(err, client.ErrOutcomeUnknown) {
				t.Fatalf("repeat = %v; want ErrOutcomeUnknown", err)
			}
			if got := f.srv.Executions("lost"); got != 1 {
				t.Fatalf("Executions after repeat = %d; want 1", got)
			}
		})
	}
}

func TestClientDisconnectMidCall(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Script(mcptest.StallAfterExecute(0))
	ctx, cancel := context.WithCancel(client.WithKey(context.Background(), "stall"))
	done := make(chan error, 1)
	go func() {
		_, err := f.c.Call(ctx, write("a", 1))
		done <- err
	}()
	<-f.srv.Stalled() // executed, response withheld
	cancel()
	err := <-done
	if !errors.Is(err, client.ErrOutcomeUnknown) && !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v; want outcome unknown or canceled", err)
	}
	if r := settled(t, f.store, "write", "stall"); r.State != ledger.StateUnknown {
		t.Fatalf("record state = %s; want UNKNOWN", r.State)
	}
	if got := f.srv.Executions("stall"); got != 1 {
		t.Fatalf("Executions = %d; want 1", got)
	}
}

func TestCancelDuringBackoffReturnsAtOnce(t *testing.T) {
	// Retry waits of an hour: only cancellation can end the call.
	st := openStore(t)
	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	srv.Script(mcptest.FailTransient(5).WithRetryAfter(time.Hour))
	cs := srv.ConnectInMemory(context.Background(), t, nil)
	waiting := make(chan struct{}, 8)
	pol := &retry.Policy{MaxAttempts: 5, MaxElapsed: 2 * time.Hour, OnRetry: func(error, time.Duration, int) { waiting <- struct{}{} }}
	c := client.New(cs, st, &client.Options{Policy: allow(), Retry: pol})
	ctx, cancel := context.WithCancel(client.WithKey(context.Background(), "backoff"))
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, write("a", 1))
		done <- err
	}()
	<-waiting // the first transient answer came back; the backoff wait begins
	// The wait is an hour: Call returning at all is the cancel's doing.
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Call = nil error after cancel")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Call did not return after cancel")
	}
	// The execution records its outcome after the caller has gone.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if r, err := st.Wait(wctx, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: "backoff"}); err != nil || r.State != ledger.StateRetryable {
		t.Fatalf("Wait = %v, %v; want RETRYABLE (never executed)", r, err)
	}
	if got := srv.TotalExecutions(); got != 0 {
		t.Fatalf("TotalExecutions = %d; want 0", got)
	}
}

// TestReplaysAreIndependentCopies: a process remembers finished results;
// each replay must still be the caller's own copy.
func TestReplaysAreIndependentCopies(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := client.WithKey(context.Background(), "copies")
	first, err := f.c.CallTool(ctx, write("a", 1))
	if err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	want, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := f.c.CallTool(ctx, write("a", 1))
		if err != nil {
			t.Fatalf("replay %d = %v", i, err)
		}
		delete(res.Meta, client.MetaReplay)
		if len(res.Meta) == 0 {
			res.Meta = nil
		}
		got, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("replay %d = %s; want %s", i, got, want)
		}
		// Scribble over everything the caller got.
		res.Content[0].(*mcp.TextContent).Text = "changed"
		res.StructuredContent.(map[string]any)["id"] = "changed"
		res.Meta = mcp.Meta{"x": 1}
	}
	if got := f.srv.Executions("copies"); got != 1 {
		t.Fatalf("Executions = %d; want 1", got)
	}
}

// TestFirstResultIsTheCallersOwn: the process remembers a new call's
// result for its replays; what the first caller does to the result it got
// must not reach them, and a replay still marshals to the stored result.
func TestFirstResultIsTheCallersOwn(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := client.WithKey(context.Background(), "own")
	first, err := f.c.CallTool(ctx, write("a", 1))
	if err != nil {
		t.Fatalf("CallTool = %v", err)
	}
	stored := record(t, f.store, "write", "own").Result
	first.Content[0].(*mcp.TextContent).Text = "changed"
	first.StructuredContent.(map[string]any)["id"] = "changed"
	first.Meta = mcp.Meta{"x": "changed"}
	res, err := f.c.CallTool(ctx, write("a", 1))
	if err != nil {
		t.Fatalf("replay = %v", err)
	}
	if _, ok := res.Meta[client.MetaReplay]; !ok {
		t.Fatalf("replay _meta = %v; want the replay marker", res.Meta)
	}
	delete(res.Meta, client.MetaReplay)
	if len(res.Meta) == 0 {
		res.Meta = nil
	}
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stored, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("replay = %s; want the stored %s", got, stored)
	}
	if got := f.srv.Executions("own"); got != 1 {
		t.Fatalf("Executions = %d; want 1", got)
	}
}

package caller

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

func TestWithKeyArg(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{}`, `{"idempotency_key":"k1"}`},
		{`{ }`, `{"idempotency_key":"k1"}`},
		{`{"id":"a","amount":1}`, `{"idempotency_key":"k1","id":"a","amount":1}`},
		{`{ "id":"a"}`, `{"idempotency_key":"k1","id":"a"}`},
		// The caller's own idempotency_key is replaced, not duplicated.
		{`{"idempotency_key":"mine","id":"a"}`, `{"id":"a","idempotency_key":"k1"}`},
		// An escaped spelling of the name takes the decoding path too.
		{`{"idempotency\u005fkey":"mine"}`, `{"idempotency_key":"k1"}`},
	} {
		raw, err := json.Marshal(WithKeyArg(json.RawMessage(tc.args), "k1"))
		if err != nil {
			t.Fatalf("WithKeyArg(%s): %v", tc.args, err)
		}
		var got, want map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("WithKeyArg(%s) = %s, not an object: %v", tc.args, raw, err)
		}
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("WithKeyArg(%s) = %s; want %s", tc.args, raw, tc.want)
		}
	}
}

// A waiter of a shared execution that panics gets an error, not a hang;
// the panic goes on up the caller that ran it.
func TestFlightPanicReleasesWaiters(t *testing.T) {
	var g flightGroup[*int]
	joined := make(chan struct{})
	waited := make(chan error, 1)
	go func() {
		<-joined
		_, err, _ := g.do(context.Background(), "k", cloneOutcome, func() (*Outcome[*int], error) {
			t.Error("a waiter ran the execution")
			return nil, nil
		})
		waited <- err
	}()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller that ran the execution")
			}
		}()
		g.do(context.Background(), "k", cloneOutcome, func() (*Outcome[*int], error) {
			close(joined)
			// Hold the flight until the waiter has joined it.
			for {
				g.mu.Lock()
				n := g.m["k"].waiters
				g.mu.Unlock()
				runtime.Gosched()
				if n == 1 {
					break
				}
			}
			panic("boom")
		})
	}()
	if err := <-waited; err != errFlightPanicked {
		t.Fatalf("waiter got %v; want errFlightPanicked", err)
	}
	if len(g.m) != 0 {
		t.Fatalf("flights left behind: %d", len(g.m))
	}
}

// Records with tiny results still count what they cost in memory, so the
// remembered set stays bounded however small the results are.
func TestFinalsBudgetCountsWholeRecords(t *testing.T) {
	var f Finals
	now := time.Now()
	for i := range 3 * finalsBudget / recordOverhead {
		f.put(&ledger.Record{
			ID:        ledger.ID{Layer: ledger.LayerClient, Tenant: "t", Tool: "write", Key: fmt.Sprintf("k%d", i)},
			State:     ledger.StateSucceeded,
			Result:    json.RawMessage(`{"content":[]}`),
			ExpiresAt: now.Add(time.Hour),
		})
	}
	if f.bytes > finalsBudget {
		t.Fatalf("remembered %d bytes; the budget is %d", f.bytes, finalsBudget)
	}
	if max := finalsBudget / recordOverhead; len(f.m) > max {
		t.Fatalf("remembered %d records; at most %d fit the budget", len(f.m), max)
	}
	sum := 0
	for _, e := range f.m {
		sum += size(e.rec)
	}
	if sum != f.bytes {
		t.Fatalf("bytes = %d; the remembered records take %d", f.bytes, sum)
	}
	last := ledger.ID{Layer: ledger.LayerClient, Tenant: "t", Tool: "write", Key: fmt.Sprintf("k%d", 3*finalsBudget/recordOverhead-1)}
	if _, ok := f.get(last, now); !ok {
		t.Fatal("the record put last is not remembered")
	}
}

func cloneOutcome(o *Outcome[*int], _ bool) (*Outcome[*int], error) {
	cp := *o
	return &cp, nil
}

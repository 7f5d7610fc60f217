package client

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"testing"
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
		raw, err := json.Marshal(withKeyArg(json.RawMessage(tc.args), "k1"))
		if err != nil {
			t.Fatalf("withKeyArg(%s): %v", tc.args, err)
		}
		var got, want map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("withKeyArg(%s) = %s, not an object: %v", tc.args, raw, err)
		}
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("withKeyArg(%s) = %s; want %s", tc.args, raw, tc.want)
		}
	}
}

// A waiter of a shared execution that panics gets an error, not a hang;
// the panic goes on up the caller that ran it.
func TestFlightPanicReleasesWaiters(t *testing.T) {
	var g flightGroup
	joined := make(chan struct{})
	waited := make(chan error, 1)
	go func() {
		<-joined
		_, err, _ := g.do(context.Background(), "k", func() (*Outcome, error) {
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
		g.do(context.Background(), "k", func() (*Outcome, error) {
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

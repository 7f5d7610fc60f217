package proxy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger"
)

// records lists the proxy layer's records of tenant default.
func records(t *testing.T, st ledger.Store) []*ledger.Record {
	t.Helper()
	page, err := st.List(context.Background(), ledger.Filter{Tenant: "default", Layer: ledger.LayerProxy})
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	return page.Records
}

// A proxy purges records past their retention itself, and keeps the ones
// still within it.
func TestProxySweepPurgesExpired(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention time.Duration
		wantLeft  int
	}{
		{"expired", time.Nanosecond, 0},
		{"within retention", time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			u := newUpstream()
			p := startProxy(t, st, u.transport, &proxy.Options{
				SweepEvery: -1, // this test sweeps by hand
				Client:     &client.Options{Retry: fastRetry, Retention: tc.retention},
			})
			h := connectHost(t, p, hostOptions{})
			if res := h.call(t, "add_note", map[string]any{"text": "a"}, nil); res.IsError {
				t.Fatalf("add_note = %q; want a result", resultText(res))
			}
			if n := len(records(t, st)); n != 1 {
				t.Fatalf("records after one call = %d; want 1", n)
			}
			p.Sweep(context.Background())
			if n := len(records(t, st)); n != tc.wantLeft {
				t.Errorf("records after Sweep = %d; want %d", n, tc.wantLeft)
			}
		})
	}
}

// Without being asked, a running proxy sweeps every SweepEvery.
func TestProxySweepsOnItsOwn(t *testing.T) {
	st := newStore(t)
	u := newUpstream()
	p := startProxy(t, st, u.transport, &proxy.Options{
		SweepEvery: 5 * time.Millisecond,
		Client:     &client.Options{Retry: fastRetry, Retention: time.Nanosecond},
	})
	h := connectHost(t, p, hostOptions{})
	if res := h.call(t, "add_note", map[string]any{"text": "a"}, nil); res.IsError {
		t.Fatalf("add_note = %q; want a result", resultText(res))
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for len(records(t, st)) > 0 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the expired record was still there after 30s of sweeps every 5ms")
		}
	}
}

// A sweep purges at most Options.SweepLimit records; the rest go at the
// next sweeps.
func TestProxySweepIsBounded(t *testing.T) {
	st := newStore(t)
	u := newUpstream()
	p := startProxy(t, st, u.transport, &proxy.Options{
		SweepEvery: -1, // this test sweeps by hand
		SweepLimit: 2,
		Client:     &client.Options{Retry: fastRetry, Retention: time.Nanosecond},
	})
	h := connectHost(t, p, hostOptions{})
	for i := range 5 {
		if res := h.call(t, "add_note", map[string]any{"text": fmt.Sprintf("note %d", i)}, nil); res.IsError {
			t.Fatalf("add_note = %q; want a result", resultText(res))
		}
	}
	if n := len(records(t, st)); n != 5 {
		t.Fatalf("records after five calls = %d; want 5", n)
	}
	for i, want := range []int{2, 2, 1, 0} {
		if n := p.Sweep(context.Background()); n != want {
			t.Errorf("sweep %d purged %d records; want %d (at most SweepLimit 2 a sweep)", i+1, n, want)
		}
	}
	if n := len(records(t, st)); n != 0 {
		t.Errorf("records after the sweeps = %d; want 0", n)
	}
}

package proxy_test

import (
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/internal/proxy"
)

// Once the host's requests stop, the proxy releases memory once per
// burst, not while requests flow and not again while it stays idle.
func TestProxyReleasesMemoryWhenIdle(t *testing.T) {
	released := make(chan struct{}, 8)
	st := newStore(t)
	u := newUpstream()
	p := startProxy(t, st, u.transport, &proxy.Options{
		IdleRelease: 10 * time.Millisecond,
		Release:     func() { released <- struct{}{} },
		Client:      &client.Options{Retry: fastRetry},
	})
	h := connectHost(t, p, hostOptions{})
	for burst := 1; burst <= 2; burst++ {
		if res := h.call(t, "add_note", map[string]any{"text": "a"}, nil); res.IsError {
			t.Fatalf("add_note = %q; want a result", resultText(res))
		}
		select {
		case <-released:
		case <-time.After(30 * time.Second):
			t.Fatalf("burst %d: no release within 30s of the last request", burst)
		}
	}
	// Idle on: a release is owed only after new requests, so none may
	// come while none were made. Several release periods pass meanwhile,
	// counted by the ticks of a timer three times as long.
	select {
	case <-released:
		t.Fatal("a release while no request came since the last one")
	case <-time.After(30 * time.Millisecond):
	}
}

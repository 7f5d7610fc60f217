package proxy_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// releasingStore is the proxy's SQLite ledger, counting the calls of its
// ReleaseMemory.
type releasingStore struct {
	*sqlite.Store
	releases chan error
}

func (s releasingStore) ReleaseMemory(ctx context.Context) error {
	err := s.Store.ReleaseMemory(ctx)
	s.releases <- err
	return err
}

// Without Options.Release, the idle proxy has the ledger give back its
// caches, once per burst.
func TestProxyReleasesLedgerMemoryWhenIdle(t *testing.T) {
	sq, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	st := releasingStore{Store: sq, releases: make(chan error, 8)}
	u := newUpstream()
	p := startProxy(t, st, u.transport, &proxy.Options{
		IdleRelease: 10 * time.Millisecond,
		Client:      &client.Options{Retry: fastRetry},
	})
	h := connectHost(t, p, hostOptions{})
	key := mcp.Meta{client.MetaKey: "note-after-release"}
	first := h.call(t, "add_note", map[string]any{"text": "a"}, key)
	if first.IsError {
		t.Fatalf("add_note = %q; want a result", resultText(first))
	}
	select {
	case err := <-st.releases:
		if err != nil {
			t.Fatalf("ReleaseMemory = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the ledger's ReleaseMemory was not called within 30s of the last request")
	}
	// The ledger still answers: a repeat replays the first call's result
	// from it (the proxy forgot the records it remembered at the same
	// release), and a new call runs.
	again := h.call(t, "add_note", map[string]any{"text": "a"}, key)
	if _, ok := replayMarker(again); !ok || resultText(again) != resultText(first) {
		t.Errorf("repeat after the release = %q (replayed: %v); want %q replayed", resultText(again), ok, resultText(first))
	}
	if res := h.call(t, "add_note", map[string]any{"text": "b"}, nil); res.IsError {
		t.Fatalf("add_note after the release = %q; want a result", resultText(res))
	}
	if n := u.notes.Load(); n != 2 {
		t.Errorf("upstream add_note runs = %d; want 2 (the repeat replayed)", n)
	}
}

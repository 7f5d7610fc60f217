package proxy_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/internal/proxy"
)

// Once the host's requests stop, the proxy releases memory once per
// burst, not while requests flow and not again while it stays idle. The
// test is the proxy's clock: it passes each idle period itself, and the
// proxy asks for the next one only when it has dealt with the one before,
// so every request falls in a known period.
func TestProxyReleasesMemoryWhenIdle(t *testing.T) {
	periods := make(chan struct{})  // one idle period passes
	waiting := make(chan struct{})  // the proxy waits for the next period
	released := make(chan struct{}) // the proxy releases
	done := make(chan struct{})
	st := newStore(t)
	u := newUpstream()
	p := startProxy(t, st, u.transport, &proxy.Options{
		IdleWait: func(ctx context.Context) bool {
			select {
			case waiting <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			select {
			case <-periods:
				return true
			case <-ctx.Done():
				return false
			}
		},
		Release: func() {
			select {
			case released <- struct{}{}:
			case <-done: // the test has ended
			}
		},
		Client: &client.Options{Retry: fastRetry},
	})
	t.Cleanup(func() { close(done) }) // before the proxy's Close: cleanups run last first
	guard := func() <-chan time.Time { return time.After(30 * time.Second) }
	// settle waits until the proxy has dealt with the last period and
	// waits for the next; a release on the way must be wanted.
	settle := func(when string, wantRelease bool) {
		t.Helper()
		if wantRelease {
			select {
			case <-released:
			case <-guard():
				t.Fatalf("%s: no release within 30s; want one", when)
			}
		}
		select {
		case <-waiting:
		case <-released:
			t.Fatalf("%s: a release; want none", when)
		case <-guard():
			t.Fatalf("%s: the proxy did not ask for the next idle period within 30s", when)
		}
	}
	pass := func() {
		t.Helper()
		select {
		case periods <- struct{}{}:
		case <-guard():
			t.Fatal("the proxy did not take the idle period within 30s")
		}
	}
	settle("start", false)
	h := connectHost(t, p, hostOptions{})
	for burst := 1; burst <= 2; burst++ {
		// A request in every period: no release.
		for range 3 {
			if res := h.call(t, "add_note", map[string]any{"text": "a"}, nil); res.IsError {
				t.Fatalf("add_note = %q; want a result", resultText(res))
			}
			pass()
			settle(fmt.Sprintf("burst %d, requests flowing", burst), false)
		}
		// A period with no request: the burst has ended.
		pass()
		settle(fmt.Sprintf("burst %d, the first period with no request", burst), true)
	}
	// Idle on: a release is owed only after new requests.
	for range 4 {
		pass()
		settle("idle after the release", false)
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

package proxy_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/mcpledger/mcpledger/internal/proxy"
)

// lockedBuffer is a log destination the proxy's goroutines share.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Each log line names its component once: the proxy's own lines
// mcpledger.proxy, those of the client it calls upstream with the
// client's, never both on one line.
func TestProxyLogNamesComponentOnce(t *testing.T) {
	u := newUpstream()
	var logs lockedBuffer
	lg := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := startProxy(t, newStore(t), u.transport, &proxy.Options{Logger: lg})
	h := connectHost(t, p, hostOptions{})
	h.call(t, "add_note", map[string]any{"text": "hello"}, nil)
	h.call(t, "add_note", map[string]any{"text": "hello"}, nil)
	out := logs.String()
	if out == "" {
		t.Fatal("the proxy logged nothing; want its lines to check")
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if n := strings.Count(line, " component="); n > 1 {
			t.Errorf("log line names its component %d times: %s", n, line)
		}
	}
}

package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/proxy"
)

// rawStdio serves p over proxy.StdioTransport on pipes and returns a
// function that sends one line and reads the next line answered.
func rawStdio(t *testing.T, p *proxy.Proxy) func(line string) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Server().Run(ctx, proxy.StdioTransport(inR, outW)) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-done
	})
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return func(line string) string {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("writing %q: %v", line, err)
		}
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the session ended after %q", line)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %q", line)
			return ""
		}
	}
}

func TestStdioBatchesBy2025_03_26(t *testing.T) {
	u := newUpstream()
	p := startProxy(t, newStore(t), u.transport, nil)
	ask := rawStdio(t, p)
	init := ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old-host","version":"1"}}}`)
	if !strings.Contains(init, `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("initialize = %s; want 2025-03-26 negotiated", init)
	}
	// No answer comes to a notification; the batch after it is answered.
	got := ask(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	var batch []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(got), &batch); err != nil || len(batch) != 2 {
		t.Fatalf("batch of two pings = %s (%v); want an array of two answers, as 2025-03-26 allows", got, err)
	}
	// A batch the SDK could not take still gets an answer, and the session goes on.
	if got := ask(`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`); !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, `"id":null`) {
		t.Errorf("batch with a repeated id = %s; want -32600 with a null id", got)
	}
	if got := ask(`{"jsonrpc":"2.0","id":5,"method":"ping"}`); !strings.Contains(got, `"id":5,"result"`) {
		t.Errorf("ping = %s; want its result", got)
	}
}

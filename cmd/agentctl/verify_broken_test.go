package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/internal/verify"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

// brokenServer is a small MCP server that advertises the idempotency
// capability and breaks one guarantee, by its mode:
//
//   - "twice": honours keys one request at a time, but checks and then
//     records, so two concurrent requests with one key both execute;
//   - "ignorekeys": executes every request, key or not;
//   - "nofence": honours keys, but never looks at the fencing token.
type brokenServer struct {
	mode  string
	execs atomic.Int64

	mu       sync.Mutex // guards first, arriving and fences
	first    map[string]firstCall
	arriving map[string]chan struct{} // closed when a second request of the key arrives
	fences   map[string]int64         // the highest fence seen per key
}

type firstCall struct {
	args string
	at   time.Time
	res  *mcp.CallToolResult
}

// overlap bounds how long a first request of a key waits for a second one
// to arrive in "twice" mode, so that sequential requests still end.
const overlap = 100 * time.Millisecond

func (b *brokenServer) handle(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	key, _ := req.Params.Meta[wire.MetaKey].(string)
	args := string(req.Params.Arguments)
	if f, ok := req.Params.Meta[wire.MetaFence].(float64); ok && b.mode != "nofence" {
		b.mu.Lock()
		stale := int64(f) < b.fences[key]
		b.fences[key] = max(b.fences[key], int64(f))
		b.mu.Unlock()
		if stale {
			return nil, server.Error(ledger.CodeInProgress, ledger.ReasonStaleFence, "broken: stale fence", time.Millisecond)
		}
	}
	if b.mode != "ignorekeys" && key != "" {
		b.mu.Lock()
		if f, ok := b.first[key]; ok {
			b.mu.Unlock()
			if f.args != args {
				return nil, server.Error(ledger.CodeKeyReused, ledger.ReasonKeyReused, "broken: key reused", 0)
			}
			res := *f.res
			res.Meta = mcp.Meta{wire.MetaReplay: wire.Replay{Key: key, State: ledger.StateSucceeded, FirstAt: f.at, Attempts: 1}}
			return &res, nil
		}
		if b.mode == "twice" {
			// The bug: nothing is recorded until the execution is over.
			ch, racing := b.arriving[key]
			if racing {
				delete(b.arriving, key)
				close(ch)
			} else {
				ch = make(chan struct{})
				b.arriving[key] = ch
			}
			b.mu.Unlock()
			if !racing {
				t := time.NewTimer(overlap)
				select {
				case <-ch:
				case <-t.C:
				}
				t.Stop()
			}
			res := b.execute(key)
			b.mu.Lock()
			delete(b.arriving, key)
			b.first[key] = firstCall{args: args, at: time.Now(), res: res}
			b.mu.Unlock()
			return res, nil
		}
		// Correct one request at a time: the lock is held through the
		// execution.
		defer b.mu.Unlock()
		res := b.execute(key)
		b.first[key] = firstCall{args: args, at: time.Now(), res: res}
		return res, nil
	}
	return b.execute(key), nil
}

func (b *brokenServer) execute(key string) *mcp.CallToolResult {
	n := b.execs.Add(1)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("wrote %s (execution %d)", key, n)}}}
}

// serveBroken serves a brokenServer over streamable HTTP on 127.0.0.1.
func serveBroken(t *testing.T, mode string) string {
	b := &brokenServer{mode: mode, first: map[string]firstCall{}, arriving: map[string]chan struct{}{}, fences: map[string]int64{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "broken-" + mode, Version: "v1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Experimental: map[string]any{
			wire.Capability: map[string]any{"version": 1, "retentionSeconds": 86400},
		}},
	})
	s.AddTool(&mcp.Tool{Name: "write", InputSchema: map[string]any{"type": "object"}}, b.handle)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL
}

// wantBroken runs verify and wants exit 1, the error line naming every
// guarantee in broken, and those (and only those) failed.
func wantBroken(t *testing.T, o outcome, broken ...string) {
	t.Helper()
	hints := make([]string, len(broken))
	for i, id := range broken {
		hints[i] = id + " "
	}
	o.wantExit(t, exitFailed, hints...)
	var failed []string
	for _, r := range jsonLines[verify.Result](t, o.stdout) {
		if r.Status == verify.Fail {
			failed = append(failed, r.ID)
			t.Logf("%s %s failed: %s (%s)", r.ID, r.Name, r.Reason, r.Figure)
		}
	}
	if strings.Join(failed, ",") != strings.Join(broken, ",") {
		t.Errorf("failed guarantees = %v; want %v\n%s", failed, broken, o.stdout)
	}
}

func TestVerifyFailsBrokenServers(t *testing.T) {
	for _, c := range []struct {
		mode   string
		broken []string
	}{
		// Two concurrent requests straight to the server both ran.
		{"twice", []string{"G2"}},
		// It advertises the capability but keeps no key: concurrent and
		// resent requests run again, a reuse with other arguments runs,
		// a repeated key is not replayed.
		{"ignorekeys", []string{"G2", "G3", "G5", "G11"}},
		// It replays the stale owner's request instead of refusing it.
		{"nofence", []string{"G7"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			_, env := ledgerEnv(t)
			url := serveBroken(t, c.mode)
			o := inProcess(t, env, nil, "--json", "verify", "--url", url, "--tool", "write", "--args", `{"id":"v","amount":1}`)
			wantBroken(t, o, c.broken...)
		})
	}
}

// sharedTenants is a ledger that keeps every tenant's records as one
// tenant's: what a store without tenant isolation does.
type sharedTenants struct{ ledger.Store }

func (s sharedTenants) Unwrap() ledger.Store { return s.Store }

const oneTenant = "shared"

func (s sharedTenants) Claim(ctx context.Context, r ledger.ClaimRequest) (ledger.Claim, error) {
	r.Tenant = oneTenant
	return s.Store.Claim(ctx, r)
}

func (s sharedTenants) Transition(ctx context.Context, tr ledger.Transition) (*ledger.Record, error) {
	tr.Tenant = oneTenant
	return s.Store.Transition(ctx, tr)
}

func (s sharedTenants) Renew(ctx context.Context, l ledger.Lease, d time.Duration) error {
	l.Tenant = oneTenant
	return s.Store.Renew(ctx, l, d)
}

func (s sharedTenants) Get(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	id.Tenant = oneTenant
	return s.Store.Get(ctx, id)
}

func (s sharedTenants) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	id.Tenant = oneTenant
	return s.Store.Wait(ctx, id)
}

func (s sharedTenants) FindRecent(ctx context.Context, q ledger.RecentQuery) ([]*ledger.Record, error) {
	q.Tenant = oneTenant
	return s.Store.FindRecent(ctx, q)
}

func (s sharedTenants) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	f.Tenant = oneTenant
	return s.Store.List(ctx, f)
}

func (s sharedTenants) Purge(ctx context.Context, p ledger.PurgeRequest) (int, error) {
	if p.Tenant != "" {
		p.Tenant = oneTenant
	}
	return s.Store.Purge(ctx, p)
}

func init() {
	// sharedtenant://PATH: a SQLite file behind sharedTenants, for the
	// test below only.
	ledgerBackends["sharedtenant"] = func(ctx context.Context, url string) (ledger.Store, error) {
		st, err := sqlite.Open(ctx, strings.TrimPrefix(url, "sharedtenant://"), nil)
		if err != nil {
			return nil, err
		}
		return sharedTenants{st}, nil
	}
}

func TestVerifyFailsSharedTenantLedger(t *testing.T) {
	url := "sharedtenant://" + filepath.Join(t.TempDir(), "ledger.db")
	o := inProcess(t, map[string]string{"HOME": t.TempDir()}, nil, "--json", "--ledger", url, "verify")
	wantBroken(t, o, "G8")
	var got verify.Result
	if err := json.Unmarshal([]byte(strings.Split(o.stdout, "\n")[7]), &got); err != nil || got.ID != "G8" || !strings.Contains(got.Reason, "second tenant") {
		t.Errorf("G8 line = %+v, %v; want the second tenant named", got, err)
	}
}

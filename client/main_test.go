package client_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/retry"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	os.Exit(m.Run())
}

// openStore opens a real SQLite ledger in a temporary folder.
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fastRetry retries without real waits: every backoff is zero.
func fastRetry() *retry.Policy {
	return &retry.Policy{MaxAttempts: 4, Rand: func() float64 { return 0 }, InitialInterval: time.Millisecond}
}

// allow is a policy that lets every tool through, so tests that are not
// about confirmation need no confirmer.
func allow() *confirm.Policy {
	return &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}
}

type fixture struct {
	srv   *mcptest.Server
	store *sqlite.Store
	c     *client.Client
}

// newFixture wires a client to an in-memory mcptest server through a
// connect function, so dropped connections are reconnected.
func newFixture(t *testing.T, srvOpts *mcptest.Options, opts *client.Options) *fixture {
	t.Helper()
	f := &fixture{srv: mcptest.New(srvOpts), store: openStore(t)}
	t.Cleanup(func() { f.srv.Close() })
	if opts == nil {
		opts = &client.Options{}
	}
	if opts.Retry == nil {
		opts.Retry = fastRetry()
	}
	if opts.Policy == nil {
		opts.Policy = allow()
	}
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, f.srv.ClientTransport(t), nil)
	}
	c, err := client.Dial(context.Background(), connect, f.store, opts)
	if err != nil {
		t.Fatalf("client.Dial = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	f.c = c
	return f
}

func write(id string, amount float64) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"id": id, "amount": amount}}
}

func record(t *testing.T, st ledger.Store, tool, key string) *ledger.Record {
	t.Helper()
	r, err := st.Get(context.Background(), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: tool, Key: key})
	if err != nil {
		t.Fatalf("Get(%q) = %v", key, err)
	}
	return r
}

// settled waits until the record leaves PROCESSING: an execution records its
// outcome even after its caller has gone.
func settled(t *testing.T, st ledger.Store, tool, key string) *ledger.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := st.Wait(ctx, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: tool, Key: key})
	if err != nil {
		t.Fatalf("Wait(%q) = %v, %v", key, r, err)
	}
	return r
}

package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/mcptest"
)

// strand leaves key UNKNOWN in st, as a client that crashed after sending
// would: claimed, then expired.
func strand(t *testing.T, st ledger.Store, key string, lease time.Duration) ledger.ID {
	t.Helper()
	fp, err := args.Fingerprint([]byte(`{"id":"a","amount":1}`))
	if err != nil {
		t.Fatal(err)
	}
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "write", Key: key}
	cl, err := st.Claim(context.Background(), ledger.ClaimRequest{ID: id, Fingerprint: fp, Owner: "crashed-process", Lease: lease})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	strandedFence = cl.Record.Fence
	return id
}

// strandedFence is the fence of the last record strand made.
var strandedFence int64

func TestFollowerExpiresADeadOwnersLease(t *testing.T) {
	f := newFixture(t, nil, nil)
	strand(t, f.store, "orphan", 100*time.Millisecond)
	// The owner never renews; the follower must not wait forever, and must
	// not run the call: it expires the lease and reports UNKNOWN.
	_, err := f.c.Call(client.WithKey(context.Background(), "orphan"), write("a", 1))
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("Call = %v; want ErrOutcomeUnknown", err)
	}
	if r := record(t, f.store, "write", "orphan"); r.State != ledger.StateUnknown || r.ErrorKind != ledger.KindLeaseExpired {
		t.Fatalf("record = %s %q; want UNKNOWN lease_expired", r.State, r.ErrorKind)
	}
	if got := f.srv.TotalExecutions(); got != 0 {
		t.Fatalf("TotalExecutions = %d; want 0", got)
	}
}

func TestUnknownIsResentToAKeyAwareServer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		serverRanIt   bool
		wantExecution int
	}{
		{"the server ran it: its answer is replayed", true, 1},
		{"the server never saw it: it runs once", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &mcptest.Options{Idempotent: true}, nil)
			id := strand(t, f.store, "maybe", time.Minute)
			if _, err := f.store.Transition(context.Background(), ledger.Transition{
				ID: id, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: "crashed-process", Fence: strandedFence, ErrorKind: "ambiguous",
			}); err != nil {
				t.Fatalf("Transition to UNKNOWN = %v", err)
			}
			var first *mcp.CallToolResult
			if tc.serverRanIt {
				cs := f.srv.ConnectInMemory(context.Background(), t, nil)
				p := write("a", 1)
				p.Meta = mcp.Meta{client.MetaKey: "maybe"}
				var err error
				if first, err = cs.CallTool(context.Background(), p); err != nil {
					t.Fatalf("direct CallTool = %v", err)
				}
			}
			o, err := f.c.Call(client.WithKey(context.Background(), "maybe"), write("a", 1))
			if err != nil {
				t.Fatalf("Call = %v; want the UNKNOWN call reconciled by a re-send", err)
			}
			if got := f.srv.Executions("maybe"); got != tc.wantExecution {
				t.Fatalf("Executions = %d; want %d", got, tc.wantExecution)
			}
			r, err := f.store.Get(context.Background(), id)
			if err != nil || r.State != ledger.StateSucceeded {
				t.Fatalf("record = %v, %v; want SUCCEEDED", r, err)
			}
			if first != nil && textOf(o.Result) != textOf(first) {
				t.Fatalf("result = %q; want the server's first answer %q", textOf(o.Result), textOf(first))
			}
		})
	}
}

func textOf(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

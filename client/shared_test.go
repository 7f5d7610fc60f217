package client_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/mcpledger/mcpledger/internal/metrictest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcptest"
	"github.com/mcpledger/mcpledger/telemetry"
)

// claimCounter is the ledger with its claims counted: a repeat answered
// from memory makes none.
type claimCounter struct {
	ledger.Store
	claims atomic.Int64
}

func (s *claimCounter) Claim(ctx context.Context, req ledger.ClaimRequest) (ledger.Claim, error) {
	s.claims.Add(1)
	return s.Store.Claim(ctx, req)
}

// counted is the sum of the counter name over every attribute set.
func counted(t *testing.T, reader *metrictest.Recorder, name string) int64 {
	t.Helper()
	return reader.Sum(name)
}

// Clients that share Options.Finals and Options.Telemetry (as a proxy's,
// one per host session): a repeat on one client of a call another
// finished is replayed from the shared memory without a claim, until the
// memory is forgotten; every client's calls are counted in the one
// telemetry, which closing a client leaves open.
func TestClientsShareFinalsAndTelemetry(t *testing.T) {
	srv := mcptest.New(nil)
	t.Cleanup(func() { srv.Close() })
	real := openStore(t)
	st := &claimCounter{Store: real}
	reader := &metrictest.Recorder{}
	mp := reader
	tel := client.NewTelemetry(real, &client.Options{MeterProvider: mp})
	t.Cleanup(func() {
		if err := tel.Close(context.Background()); err != nil {
			t.Errorf("telemetry Close = %v", err)
		}
	})
	fin := caller.NewFinals(0)
	dial := func(session string) *client.Client {
		t.Helper()
		connect := func(ctx context.Context) (*mcp.ClientSession, error) {
			return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, srv.ClientTransport(t), nil)
		}
		c, err := client.Dial(context.Background(), connect, st, &client.Options{
			Session: session, Policy: allow(), Retry: fastRetry(), Finals: fin, Telemetry: tel,
		})
		if err != nil {
			t.Fatalf("client.Dial(%s) = %v", session, err)
		}
		return c
	}
	ctx := client.WithKey(context.Background(), "order-1")
	call := func(c *client.Client, who string) *client.Outcome {
		t.Helper()
		o, err := c.Call(ctx, write("o1", 5))
		if err != nil {
			t.Fatalf("%s: Call = %v", who, err)
		}
		return o
	}

	a, b := dial("a"), dial("b")
	if o := call(a, "a"); o.Replayed {
		t.Fatal("a: the first call was replayed")
	}
	claims := st.claims.Load()
	if o := call(b, "b"); !o.Replayed {
		t.Fatal("b: the repeat was not replayed")
	}
	if got := st.claims.Load(); got != claims {
		t.Errorf("b's repeat made %d claims; want none, answered from the shared memory", got-claims)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("a.Close = %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("b.Close = %v", err)
	}

	fin.Forget()
	c := dial("c")
	t.Cleanup(func() { c.Close() })
	if o := call(c, "c"); !o.Replayed {
		t.Fatal("c: the repeat after Forget was not replayed")
	}
	if got := st.claims.Load(); got != claims+1 {
		t.Errorf("c's repeat after Forget made %d claims; want 1, the ledger read", got-claims)
	}
	if n := srv.TotalExecutions(); n != 1 {
		t.Errorf("executions = %d; want 1", n)
	}
	// The shared telemetry outlived a and b: c's call is counted too, and
	// its event written, not dropped by a closed writer.
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatalf("telemetry Flush = %v", err)
	}
	if n := counted(t, reader, telemetry.MetricCalls); n != 3 {
		t.Errorf("%s counted %d calls; want 3, every client's", telemetry.MetricCalls, n)
	}
	if n := counted(t, reader, telemetry.MetricEventsDropped); n != 0 {
		t.Errorf("%s = %d; want 0: closing a client closed the shared telemetry", telemetry.MetricEventsDropped, n)
	}
}

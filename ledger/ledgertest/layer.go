package ledgertest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// testLayer checks that one (tenant, tool, key) in two layers is two
// records: a client and a server guard sharing one ledger each see only
// their own, and List shows and filters the layer.
func testLayer(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	client := req("shared", "client-owner")
	client.Layer = ledger.LayerClient
	server := req("shared", "server-owner")
	server.Layer = ledger.LayerServer
	server.Session = "mcp-session-9"
	server.Fingerprint = fp("the server's own fingerprint")
	recC, recS := e.mustClaim(client), e.mustClaim(server)
	if recC.Layer != ledger.LayerClient || recS.Layer != ledger.LayerServer {
		t.Fatalf("claims of one key in two layers = layers %q and %q; want two records", recC.Layer, recS.Layer)
	}
	if recS.Fence != 1 {
		t.Errorf("the server layer's first claim has fence %d; want 1 (fences count per layer)", recS.Fence)
	}

	t.Run("Get", func(t *testing.T) {
		if got := e.mustGet(server.ID); got.Owner != "server-owner" || got.Layer != ledger.LayerServer {
			t.Errorf("Get(server layer) = owner %q layer %q; want the server's own record", got.Owner, got.Layer)
		}
		if got := e.mustGet(client.ID); got.Owner != "client-owner" || got.Layer != ledger.LayerClient {
			t.Errorf("Get(client layer) = owner %q layer %q; want the client's own record", got.Owner, got.Layer)
		}
		proxy := client.ID
		proxy.Layer = ledger.LayerProxy
		if _, err := e.st.Get(e.ctx, proxy); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get in a layer with no record = %v; want ErrNotFound", err)
		}
		ctx, cancel := context.WithTimeout(e.ctx, waitBound)
		defer cancel()
		if _, err := e.st.Wait(ctx, proxy); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Wait in a layer with no record = %v; want ErrNotFound", err)
		}
	})
	t.Run("Writes", func(t *testing.T) {
		done := e.sub(t).mustTransition(ledger.Transition{ID: server.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "server-owner", Fence: recS.Fence, Result: []byte(`{"paid":true}`), AddAttempts: 1})
		if done.Layer != ledger.LayerServer {
			t.Errorf("the server's transition returned layer %q", done.Layer)
		}
		if got := e.sub(t).mustGet(client.ID); got.State != ledger.StateProcessing || got.Result != nil {
			t.Errorf("the client's record is %s with result %s after the server's write; want PROCESSING and no result", got.State, got.Result)
		}
		// The client's owner writes its own layer's record, not the other.
		_, err := e.st.Transition(e.ctx, ledger.Transition{ID: server.ID, From: ledger.StateProcessing, To: ledger.StateFailed, Owner: "client-owner", Fence: recC.Fence})
		if !errors.Is(err, ledger.ErrStateChanged) && !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("a transition of the server layer's settled record by the client's lease = %v; want ErrStateChanged or ErrLeaseLost", err)
		}
		if err := e.st.Renew(e.ctx, ledger.Lease{ID: ledger.ID{Tenant: tenant, Layer: ledger.LayerProxy, Tool: tool, Key: "shared"}, Owner: "client-owner", Fence: recC.Fence}, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Renew in a layer with no record = %v; want ErrLeaseLost", err)
		}
		// A claim of the server layer's key is a follower of the server's
		// record, whatever the client layer holds.
		c, err := e.st.Claim(e.ctx, server)
		if err != nil || c.Won || c.Record.State != ledger.StateSucceeded || c.Record.Layer != ledger.LayerServer {
			t.Errorf("a second claim in the server layer = won %v state %v, %v; want the SUCCEEDED server record", c.Won, c.Record, err)
		}
	})
	t.Run("Recent", func(t *testing.T) {
		q := ledger.RecentQuery{Tenant: tenant, Layer: ledger.LayerClient, Session: client.Session, Tool: tool,
			Fingerprint: client.Fingerprint, Since: Start.Add(-time.Hour)}
		got, err := e.st.FindRecent(e.ctx, q)
		if err != nil || len(got) != 1 || got[0].Layer != ledger.LayerClient {
			t.Fatalf("FindRecent(client layer) = %v, %v; want the client's record alone", keysAndLayers(got), err)
		}
		// The same session and fingerprint in the server layer.
		twin := req("twin", "server-owner")
		twin.Layer = ledger.LayerServer
		e.sub(t).mustClaim(twin)
		got, err = e.st.FindRecent(e.ctx, q)
		if err != nil || len(got) != 1 || got[0].Key != "shared" {
			t.Errorf("FindRecent(client layer) with a server record of the same session and fingerprint = %v, %v; want the client's record alone", keysAndLayers(got), err)
		}
		q.Layer = ledger.LayerServer
		got, err = e.st.FindRecent(e.ctx, q)
		if err != nil || len(got) != 1 || got[0].Key != "twin" {
			t.Errorf("FindRecent(server layer) = %v, %v; want the server's twin alone", keysAndLayers(got), err)
		}
	})
	t.Run("List", func(t *testing.T) {
		all := listAll(t, e, ledger.Filter{Tenant: tenant, Limit: 1})
		var layers []string
		for _, r := range all {
			if r.Key == "shared" {
				layers = append(layers, r.Layer)
			}
		}
		slices.Sort(layers)
		if !slices.Equal(layers, []string{ledger.LayerClient, ledger.LayerServer}) {
			t.Errorf("List pages of one (created_at, tool, key) in two layers = layers %v; want client and server, each once", layers)
		}
		only := listAll(t, e, ledger.Filter{Tenant: tenant, Layer: ledger.LayerClient})
		for _, r := range only {
			if r.Layer != ledger.LayerClient {
				t.Errorf("List(layer client) returned %s in layer %q", r.Key, r.Layer)
			}
		}
		if len(only) != 1 {
			t.Errorf("List(layer client) = %v; want the client's one record", keysAndLayers(only))
		}
	})
	t.Run("Expire", func(t *testing.T) {
		e := newEnv(t, newStore)
		a := req("both", "client-owner")
		a.Layer = ledger.LayerClient
		b := req("both", "proxy-owner")
		b.Layer = ledger.LayerProxy
		e.mustClaim(a)
		e.mustClaim(b)
		e.clock.Advance(ledger.DefaultLease + time.Second)
		n, err := e.st.ExpireLeases(e.ctx)
		if err != nil || n != 2 {
			t.Fatalf("ExpireLeases = %d, %v; want 2 (one per layer)", n, err)
		}
		for _, i := range []ledger.ID{a.ID, b.ID} {
			if got := e.mustGet(i); got.State != ledger.StateUnknown {
				t.Errorf("layer %s after the lease ended: %s; want UNKNOWN", i.Layer, got.State)
			}
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		bad := req("bad-layer", "owner")
		bad.Layer = "no spaces"
		if _, err := e.st.Claim(e.ctx, bad); !errors.Is(err, ledger.ErrInvalidLayer) {
			t.Errorf("Claim with layer %q = %v; want ErrInvalidLayer", bad.Layer, err)
		}
	})
}

func listAll(t *testing.T, e *env, f ledger.Filter) []*ledger.Record {
	t.Helper()
	var out []*ledger.Record
	for range 100 {
		p, err := e.st.List(e.ctx, f)
		if err != nil {
			t.Fatalf("List(%+v) = %v", f, err)
		}
		out = append(out, p.Records...)
		if p.Next == "" {
			return out
		}
		f.Cursor = p.Next
	}
	t.Fatalf("List(%+v) did not end within 100 pages", f)
	return nil
}

func keysAndLayers(recs []*ledger.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Layer + ":" + r.Key
	}
	return out
}

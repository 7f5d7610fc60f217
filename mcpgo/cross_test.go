package mcpgo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	lclient "github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/process"
	"github.com/mcpledger/mcpledger/mcpgo/internal/orders"
)

// Fifty identical calls with one key, from five agents with ledgers of
// their own (ten goroutines each), run the tool once: each agent's ledger
// shares one execution among its goroutines, and the server's guard among
// the agents. Every caller gets the one result.
func TestFiftyCallsExecuteOnce(t *testing.T) {
	each(t, func(t *testing.T, p pair, w string) {
		u := newUpstream(t, p.serverSDK, w, true)
		const agents, per = 5, 10
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex // guards texts and errs
			texts = map[string]int{}
			errs  []error
		)
		for i := range agents {
			a := p.agent(t, u, openStore(t, fmt.Sprintf("agent%d.db", i)))
			for range per {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ans, err := a.call(keyed(t.Context(), "order-50"), map[string]any{"item": "book", "qty": 2})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					texts[ans.text]++
				}()
			}
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%d of %d calls failed; first: %v", len(errs), agents*per, errs[0])
		}
		if got := u.runs(); got != 1 {
			t.Errorf("create_order ran %d times for %d identical calls; want 1", got, agents*per)
		}
		if len(texts) != 1 || texts["ord-book (run 1)"] != agents*per {
			t.Errorf("answers = %v; want all %d to be %q", texts, agents*per, "ord-book (run 1)")
		}
	})
}

// A response lost after the handler ran (the connection dropped, the
// stdio server gone) is retried with the same key, which a guarded server
// answers from its record: the tool ran once, and the answer is its
// replay.
func TestLostResponseIsReplayed(t *testing.T) {
	each(t, func(t *testing.T, p pair, w string) {
		u := newUpstream(t, p.serverSDK, w, true)
		a := p.agent(t, u, openStore(t, "agent.db"))
		u.drop()
		ans, err := a.call(keyed(t.Context(), "order-lost"), map[string]any{"item": "lamp", "qty": 1})
		if err != nil {
			t.Fatalf("call after a lost response: %v", err)
		}
		if got := u.runs(); got != 1 {
			t.Errorf("create_order ran %d times; want 1", got)
		}
		if ans.text != "ord-lamp (run 1)" || !ans.marker || ans.attempts != 2 {
			t.Errorf("answer = %+v; want the first run's text with the server's replay marker after 2 attempts", ans)
		}
	})
}

// A key used again with other arguments is refused: by the agent's own
// ledger when it made the first call, and by the server's guard (-31001,
// ledger.ErrKeyReused at the agent) when another agent did. Nothing runs.
func TestKeyReuseIsRefused(t *testing.T) {
	each(t, func(t *testing.T, p pair, w string) {
		u := newUpstream(t, p.serverSDK, w, true)
		first := p.agent(t, u, openStore(t, "first.db"))
		if _, err := first.call(keyed(t.Context(), "order-r"), map[string]any{"item": "pen", "qty": 1}); err != nil {
			t.Fatalf("first call: %v", err)
		}
		_, err := first.call(keyed(t.Context(), "order-r"), map[string]any{"item": "pen", "qty": 9})
		if !errors.Is(err, ledger.ErrKeyReused) {
			t.Errorf("same agent, other arguments: err = %v; want ledger.ErrKeyReused", err)
		}
		other := p.agent(t, u, openStore(t, "other.db"))
		_, err = other.call(keyed(t.Context(), "order-r"), map[string]any{"item": "pen", "qty": 9})
		if !errors.Is(err, ledger.ErrKeyReused) || !errors.Is(err, lclient.ErrRejected) {
			t.Errorf("other agent, other arguments: err = %v; want the server's key_reused (ledger.ErrKeyReused, client.ErrRejected)", err)
		}
		if got := u.runs(); got != 1 {
			t.Errorf("create_order ran %d times; want 1", got)
		}
	})
}

// Two tenants of one ledger send the same key with the same arguments to
// a guarded server that does not keep keys per tenant: their keys go out
// distinct, so each tenant's call runs once, and a repeat is its own
// tenant's replay.
func TestTenantsAreDistinctOnTheWire(t *testing.T) {
	each(t, func(t *testing.T, p pair, w string) {
		u := newUpstream(t, p.serverSDK, w, true)
		store := openStore(t, "agent.db")
		args := map[string]any{"item": "lamp", "qty": 1}
		texts := map[string]string{}
		for _, tenant := range []string{"acme", "globex", "acme"} {
			ans, err := p.tenantAgent(t, u, store, tenant).call(keyed(t.Context(), "order-t"), args)
			if err != nil {
				t.Fatalf("tenant %s: %v", tenant, err)
			}
			if prev, ok := texts[tenant]; ok && prev != ans.text {
				t.Errorf("tenant %s's repeat = %q; want its first answer %q", tenant, ans.text, prev)
			}
			texts[tenant] = ans.text
		}
		if got := u.runs(); got != 2 {
			t.Errorf("create_order ran %d times; want 2 (once per tenant)", got)
		}
	})
}

// Against a server without the capability, a lost response leaves the
// call UNKNOWN: it is not sent again, by this call or the next one with
// the key.
func TestUnknownWithoutCapability(t *testing.T) {
	each(t, func(t *testing.T, p pair, w string) {
		u := newUpstream(t, p.serverSDK, w, false)
		a := p.agent(t, u, openStore(t, "agent.db"))
		u.drop()
		args := map[string]any{"item": "desk", "qty": 1}
		_, err := a.call(keyed(t.Context(), "order-u"), args)
		var e *lclient.Error
		if !errors.Is(err, lclient.ErrOutcomeUnknown) || !errors.As(err, &e) || e.State != ledger.StateUnknown {
			t.Fatalf("call with a lost response: err = %v; want client.ErrOutcomeUnknown with the record UNKNOWN", err)
		}
		if e.Text == "" {
			t.Errorf("the error has no model-facing text")
		}
		_, err = a.call(keyed(t.Context(), "order-u"), args)
		if !errors.Is(err, lclient.ErrOutcomeUnknown) {
			t.Errorf("the same call again: err = %v; want client.ErrOutcomeUnknown", err)
		}
		if got := u.runs(); got != 1 {
			t.Errorf("create_order ran %d times; want 1 (an UNKNOWN call is never re-run)", got)
		}
	})
}

// deadOwner is the owner string of a process of this host that is gone.
func deadOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	o := process.Self("crashed-agent")
	o.PID, o.Start = cmd.Process.Pid, 1
	if !process.Gone(o.String()) {
		t.Skip("this host cannot tell a gone process (no /proc)")
	}
	return o.String()
}

// An agent that died holding a call leaves it UNKNOWN; the mcp-go agent
// re-sends it under its key only to a server that honours keys, which
// runs it once, and never to one that does not.
func TestUnknownIsResentOnlyToAKeyAwareServer(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		t.Run(fmt.Sprintf("guarded=%v", guarded), func(t *testing.T) {
			u := newUpstream(t, "gosdk", "http", guarded)
			store := openStore(t, "agent.db")
			doc := map[string]any{"item": "chair", "qty": 1}
			raw, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			fp, err := args.Fingerprint(raw)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := store.Claim(t.Context(), ledger.ClaimRequest{
				ID: ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: orders.Tool, Key: "order-dead"}, Session: "s-dead",
				Fingerprint: fp, Arguments: raw, Owner: deadOwner(t), Lease: time.Hour,
			})
			if err != nil || !cl.Won {
				t.Fatalf("Claim = %+v, %v; want a won claim", cl, err)
			}
			a := newMCPGoAgent(t, u, store, "")
			ans, err := a.call(keyed(t.Context(), "order-dead"), doc)
			switch {
			case guarded && (err != nil || ans.text != "ord-chair (run 1)"):
				t.Errorf("call = %+v, %v; want the call re-sent and run once", ans, err)
			case !guarded && !errors.Is(err, lclient.ErrOutcomeUnknown):
				t.Errorf("call = %+v, %v; want client.ErrOutcomeUnknown (never re-sent to a server without the capability)", ans, err)
			}
			want := int64(0)
			if guarded {
				want = 1
			}
			if got := u.runs(); got != want {
				t.Errorf("create_order ran %d times; want %d", got, want)
			}
		})
	}
}

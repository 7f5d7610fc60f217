package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

var all = []guarantee{
	{"G1", "concurrent callers", "N callers, each its own ledger client, call one key at once", concurrentCallers},
	{"G2", "server dedupe", "N requests with one key go straight to the key-aware server at once", serverDedupe},
	{"G3", "key reuse", "the key of a finished call comes back with other arguments", keyReuse},
	{"G4", "replay", "a new client repeats a finished call's key", replay},
	{"G5", "lost response", "the server answers, the answer is lost, the caller goes on", lostResponse},
	{"G6", "killed owner", "the process holding a call dies (a ledger owner; the --server child mid-call)", killedOwner},
	{"G7", "lease take-over", "an owner's lease runs out, another takes the key over, the old owner writes late", leaseTakeOver},
	{"G8", "tenants apart", "two tenants use the same key", tenantsApart},
	{"G9", "secrets redacted", "an argument holds a secret", secretsRedacted},
	{"G10", "retention", "records outlive their retention, then a reuse follows the policy (reexecute, verify)", retention},
	{"G11", "capability", "what the server advertises against what it does with keys", capability},
	{"G12", "unknown resolves", "a call is cut off after its effect (UNKNOWN), then its key is re-sent", unknownResolves},
	{"G13", "ledger durability", "the ledger's server: do commits wait for a synchronous standby (PostgreSQL)", ledgerDurability},
}

// counted is the figure's note of how executions were counted.
func (r *runner) countedBy() string {
	if r.t.Count == nil {
		return "by the ledger's claims"
	}
	return "by " + r.t.CountBy
}

func concurrentCallers(ctx context.Context, r *runner) outcome {
	n := r.t.Callers
	cs, err := r.session(ctx, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(cs)
	key := r.key("g1")
	var (
		fresh, ok atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex // guards bodies and errs
		bodies    = map[string]int{}
		errs      []error
	)
	start := make(chan struct{})
	for range n {
		// Each caller is its own Client: no in-process sharing, so only
		// the ledger's atomic claim keeps them to one execution.
		cl := client.New(cs, r.t.Store, r.clientOptions(r.tenant))
		wg.Go(func() {
			<-start
			o, err := r.call(ctx, cl, key, r.copyArgs())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ok.Add(1)
			if !o.Replayed {
				fresh.Add(1)
			}
			b, berr := body(o.Result)
			if berr != nil {
				errs = append(errs, berr)
				return
			}
			bodies[string(b)]++
		})
	}
	close(start)
	wg.Wait()
	figure := fmt.Sprintf("%d concurrent callers, %d execution(s) %s", n, fresh.Load(), r.countedBy())
	if len(errs) > 0 {
		return fail(figure, "%d of %d callers got no result; the first: %v", len(errs), n, errs[0])
	}
	if c, has, err := r.count(ctx, r.wireKey(r.tenant, key)); err != nil {
		return fail(figure, "%v", err)
	} else if has {
		figure = fmt.Sprintf("%d concurrent callers, %d execution(s) %s", n, c, r.countedBy())
		if c != 1 {
			return fail(figure, "the tool ran %d times for one key", c)
		}
	}
	if fresh.Load() != 1 {
		return fail(figure, "%d callers were answered by an execution of their own; want 1 and %d replays", fresh.Load(), n-1)
	}
	if len(bodies) != 1 {
		return fail(figure, "the callers got %d different results for one key", len(bodies))
	}
	return pass("%s", figure)
}

func serverDedupe(ctx context.Context, r *runner) outcome {
	if !r.keyAware {
		return skip("the server does not advertise %s: it is not key-aware", wire.Capability)
	}
	const n = 10
	cs, err := r.session(ctx, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(cs)
	key := r.key("g2")
	var (
		fresh, replayed, busy atomic.Int64
		wg                    sync.WaitGroup
		mu                    sync.Mutex // guards errs
		errs                  []error
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			res, err := r.direct(ctx, cs, key, 0, r.copyArgs())
			if code, _, isRPC := rpcCode(err); isRPC && code == ledger.CodeInProgress {
				busy.Add(1)
				return
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			if _, ok := replayMarker(res); ok {
				replayed.Add(1)
				return
			}
			fresh.Add(1)
		})
	}
	close(start)
	wg.Wait()
	execs := int(fresh.Load())
	how := "by the server's answers"
	if c, has, err := r.count(ctx, key); err != nil {
		return fail("", "%v", err)
	} else if has {
		execs, how = c, r.countedBy()
	}
	figure := fmt.Sprintf("%d concurrent requests, %d execution(s) %s (%d replayed, %d in progress)", n, execs, how, replayed.Load(), busy.Load())
	if len(errs) > 0 {
		return fail(figure, "%d requests failed; the first: %v", len(errs), errs[0])
	}
	if execs != 1 {
		return fail(figure, "the server executed one key %d times", execs)
	}
	return pass("%s", figure)
}

// vary returns args with one business value changed (a number plus one,
// else a string with "2" appended), and its name; "" when none can be.
func vary(args map[string]any) (map[string]any, string) {
	names := make([]string, 0, len(args))
	for k := range args {
		if k != wire.ArgKey {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = v
	}
	for _, k := range names {
		if f, ok := args[k].(float64); ok {
			out[k] = f + 1
			return out, k
		}
	}
	for _, k := range names {
		if s, ok := args[k].(string); ok {
			out[k] = s + "2"
			return out, k
		}
	}
	return nil, ""
}

func keyReuse(ctx context.Context, r *runner) outcome {
	other, field := vary(r.t.Args)
	if other == nil {
		return skip("the arguments have no number or string to change")
	}
	cl, err := r.dial(ctx, r.tenant, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(cl)
	key := r.key("g3")
	if _, err := r.call(ctx, cl, key, r.copyArgs()); err != nil {
		return fail("", "the first call failed: %v", err)
	}
	_, err = r.call(ctx, cl, key, other)
	if !errors.Is(err, ledger.ErrKeyReused) {
		return fail("", "the key with %s changed got %v; want key reused, nothing run", field, err)
	}
	figure := fmt.Sprintf("%s changed: refused by the ledger", field)
	if c, has, err := r.count(ctx, r.wireKey(r.tenant, key)); err != nil {
		return fail(figure, "%v", err)
	} else if has {
		figure += fmt.Sprintf(", %d execution(s) %s", c, r.countedBy())
		if c != 1 {
			return fail(figure, "the tool ran %d times; want 1 (the first call only)", c)
		}
	}
	if !r.keyAware {
		return pass("%s; the server is not key-aware", figure)
	}
	cs, err := r.session(ctx, nil)
	if err != nil {
		return fail(figure, "%v", err)
	}
	defer closeAfterCheck(cs)
	skey := r.key("g3s")
	if _, err := r.direct(ctx, cs, skey, 0, r.copyArgs()); err != nil {
		return fail(figure, "the first direct request failed: %v", err)
	}
	before, _, err := r.count(ctx, skey)
	if err != nil {
		return fail(figure, "%v", err)
	}
	res, err := r.direct(ctx, cs, skey, 0, other)
	if code, _, _ := rpcCode(err); code != ledger.CodeKeyReused {
		return fail(figure, "the server answered the key with other arguments with %s; want %d key_reused", answerText(res, err), ledger.CodeKeyReused)
	}
	if after, has, err := r.count(ctx, skey); err != nil {
		return fail(figure, "%v", err)
	} else if has && after != before {
		return fail(figure, "the server refused the reuse but the tool ran (%d executions, was %d)", after, before)
	}
	return pass("%s and by the server (%d key_reused)", figure, ledger.CodeKeyReused)
}

// answerText says what a direct request got, briefly.
func answerText(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return fmt.Sprintf("error %v", ledger.OneLine(err.Error(), 120))
	}
	if res == nil {
		return "nothing"
	}
	return "a result"
}

func replay(ctx context.Context, r *runner) outcome {
	first, err := r.dial(ctx, r.tenant, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(first)
	key := r.key("g4")
	o1, err := r.call(ctx, first, key, r.copyArgs())
	if err != nil {
		return fail("", "the first call failed: %v", err)
	}
	// A new client remembers nothing in memory: its answer is the ledger's.
	second, err := r.dial(ctx, r.tenant, nil)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(second)
	o2, err := r.call(ctx, second, key, r.copyArgs())
	if err != nil {
		return fail("", "the repeat failed: %v", err)
	}
	b1, err1 := body(o1.Result)
	b2, err2 := body(o2.Result)
	if err := errors.Join(err1, err2); err != nil {
		return fail("", "%v", err)
	}
	m, marked := replayMarker(o2.Result)
	figure := fmt.Sprintf("%d bytes replayed", len(b2))
	switch {
	case !o2.Replayed:
		return fail(figure, "the repeat ran the tool again instead of replaying")
	case !bytes.Equal(b1, b2):
		return fail(figure, "the replay differs from the first result:\n first  %.200s\n replay %.200s", b1, b2)
	case !marked:
		return fail(figure, "the replay carries no _meta[%q]", wire.MetaReplay)
	case m.Key != key || !m.State.Final() || m.Attempts < 1 || m.FirstAt.IsZero():
		return fail(figure, "the replay marker is %+v; want key %s, a final state, attempts and firstAt", m, key)
	}
	figure = fmt.Sprintf("%d bytes replayed byte for byte, marker {state %s, attempts %d}", len(b2), m.State, m.Attempts)
	if c, has, err := r.count(ctx, r.wireKey(r.tenant, key)); err != nil {
		return fail(figure, "%v", err)
	} else if has {
		figure += fmt.Sprintf(", %d execution(s)", c)
		if c != 1 {
			return fail(figure, "the tool ran %d times for a call and its replay", c)
		}
	}
	return pass("%s", figure)
}

func lostResponse(ctx context.Context, r *runner) outcome {
	h := &hooks{}
	cl, err := r.dial(ctx, r.tenant, h)
	if err != nil {
		return fail("", "%v", err)
	}
	defer closeAfterCheck(cl)
	h.dropNext.Store(true)
	key := r.key("g5")
	o, err := r.call(ctx, cl, key, r.copyArgs())
	sent := h.sent.Load()
	if h.dropNext.Load() {
		return fail("", "no response was lost: the call got %v", err)
	}
	c, has, cerr := r.count(ctx, r.wireKey(r.tenant, key))
	if cerr != nil {
		return fail("", "%v", cerr)
	}
	if !r.keyAware {
		figure := fmt.Sprintf("not key-aware: %d request(s) sent", sent)
		state, named := client.StateOf(err)
		switch {
		case !named || ledger.RowOf(state).Act != ledger.ActReconcile:
			return fail(figure, "the call ended %v (state %q); want UNKNOWN: the server may have run it", err, state)
		case sent != 1:
			return fail(figure, "the call was sent %d times to a server that does not honour keys: a blind re-run", sent)
		case has && c != 1:
			return fail(figure, "the tool ran %d times", c)
		}
		if has {
			figure += fmt.Sprintf(", %d execution(s)", c)
		}
		return pass("%s, UNKNOWN, never re-run", figure)
	}
	figure := fmt.Sprintf("resent under the key (%d requests)", sent)
	if err != nil {
		if state, named := client.StateOf(err); named && ledger.RowOf(state).Act == ledger.ActReconcile && (!has || c <= 1) {
			return pass("%s, UNKNOWN", figure)
		}
		return fail(figure, "the resent call failed: %v", err)
	}
	if has {
		figure += fmt.Sprintf(", %d execution(s) %s", c, r.countedBy())
		if c != 1 {
			return fail(figure, "the key-aware server ran the resent call again: %d executions", c)
		}
		return pass("%s", figure)
	}
	if _, ok := replayMarker(o.Result); !ok {
		return fail(figure, "the server answered the resent call with a fresh result, not a replay: it ran twice")
	}
	return pass("%s, the server replayed its first answer", figure)
}

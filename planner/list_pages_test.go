package planner_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
)

// claimMany claims n records of one session, keys prefix-0000…, from a few
// goroutines so the store commits them in groups.
func claimMany(t *testing.T, st ledger.Store, tenant, session, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				_, err := st.Claim(context.Background(), ledger.ClaimRequest{
					ID:      ledger.ID{Tenant: tenant, Layer: ledger.LayerClient, Tool: "create_payment", Key: fmt.Sprintf("%s-%05d", prefix, i)},
					Session: session, Fingerprint: "fp", Owner: "test",
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Claim = %v", err)
	}
}

// ledger_list pages through a session of a few thousand calls with its
// cursor, seven at a time, while calls are added: every call that was
// there when the walk began is listed once, none twice.
func TestListPagesWithCursor(t *testing.T) {
	c := newClock()
	st := openStore(t, c)
	const n = 2000
	claimMany(t, st, "acme", "s1", "k", n)
	claimMany(t, st, "acme", "s2", "other", 50) // another session: never listed
	tools := &planner.Tools{Store: st, Now: c.Now}
	seen := map[string]int{}
	in := planner.ListInput{Limit: 7}
	for page := 0; ; page++ {
		if page > n {
			t.Fatalf("more than %d pages of 7 for %d calls: the cursor does not advance", n, n)
		}
		text, out, err := tools.List(context.Background(), planner.Scope{Tenant: "acme", Session: "s1"}, in)
		if err != nil {
			t.Fatalf("List(cursor %q) = %v", in.Cursor, err)
		}
		if len(out.Calls) > 7 {
			t.Fatalf("a page of limit 7 has %d calls", len(out.Calls))
		}
		for _, call := range out.Calls {
			seen[call.Key]++
		}
		// A call made during the walk: it may or may not be listed, but
		// it must not move the others.
		claimMany(t, st, "acme", "s1", fmt.Sprintf("new%04d", page), 1)
		if !out.More {
			break
		}
		if out.Next == "" || !strings.Contains(text, out.Next) {
			t.Fatalf("a page with more calls names no next cursor: %q; text %q", out.Next, text)
		}
		in.Cursor = out.Next
	}
	for i := 0; i < n; i++ {
		if k := fmt.Sprintf("k-%05d", i); seen[k] != 1 {
			t.Errorf("call %s listed %d times; want once", k, seen[k])
		}
	}
	for k, times := range seen {
		if strings.HasPrefix(k, "other") || times != 1 {
			t.Errorf("call %s listed %d times", k, times)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// seedRecords claims n records of tenant default, keys prefix-00000…, from
// a few goroutines so the store commits them in groups.
func seedRecords(t *testing.T, st ledger.Store, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := ledger.ID{Tenant: "default", Layer: ledger.LayerClient, Tool: "create_payment", Key: fmt.Sprintf("%s-%05d", prefix, i)}
				if _, err := st.Claim(context.Background(), ledger.ClaimRequest{ID: id, Session: "s", Fingerprint: "fp", Owner: "test"}); err != nil {
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

// agentctl ledger list pages through a few thousand records with the
// cursor it prints, while records are added: every record that was there
// when the walk began is listed once, none twice.
func TestLedgerListPagesWithCursor(t *testing.T) {
	e := newE2E(t)
	path := filepath.Join(e.dir, "ledger.db")
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const n = 2000
	seedRecords(t, st, "k", n)
	seen := map[string]int{}
	args := []string{"--json", "ledger", "list", "--limit", "97"}
	for page := 0; ; page++ {
		if page > n {
			t.Fatalf("more than %d pages: the cursor does not advance", n)
		}
		out := e.run(nil, args...)
		if out.code != 0 {
			t.Fatalf("agentctl %q = exit %d; stderr %s", args, out.code, out.stderr)
		}
		lines := 0
		sc := bufio.NewScanner(strings.NewReader(out.stdout))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r struct{ Key string }
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			seen[r.Key]++
			lines++
		}
		if lines > 97 {
			t.Fatalf("a page of --limit 97 has %d records", lines)
		}
		seedRecords(t, st, fmt.Sprintf("new%04d", page), 3) // records made during the walk
		_, next, ok := strings.Cut(out.stderr, "next page: --cursor ")
		if !ok {
			break
		}
		args = []string{"--json", "ledger", "list", "--limit", "97", "--after", strings.TrimSpace(next)}
	}
	for i := 0; i < n; i++ {
		if k := fmt.Sprintf("k-%05d", i); seen[k] != 1 {
			t.Errorf("record %s listed %d times; want once", k, seen[k])
		}
	}
	for k, times := range seen {
		if times != 1 {
			t.Errorf("record %s listed %d times; want once", k, times)
		}
	}
	if out := e.run(nil, "ledger", "list", "--cursor", "not-a-cursor"); out.code != exitUsage || !strings.Contains(out.stderr, "--cursor") {
		t.Errorf("ledger list --cursor not-a-cursor = exit %d, %q; want %d naming --cursor", out.code, out.stderr, exitUsage)
	}
}

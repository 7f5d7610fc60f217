package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcpledger/mcpledger/internal/audit"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// heapSampler is an export's output: it keeps nothing, and every 200
// lines it collects garbage and notes the live heap, the most of which an
// export's memory is.
type heapSampler struct {
	lines int
	peak  uint64
}

func (h *heapSampler) Write(p []byte) (int, error) {
	for range strings.Count(string(p), "\n") {
		h.lines++
		if h.lines%200 == 0 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			h.peak = max(h.peak, m.HeapAlloc)
		}
	}
	return len(p), nil
}

// seedLarge writes n SUCCEEDED records of tenant acme, each with an 8 KB
// result, from a few goroutines so the store commits them in groups.
func seedLarge(t *testing.T, st ledger.Store, n int) {
	t.Helper()
	result, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": strings.Repeat("r", 8<<10)}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: fmt.Sprintf("k-%05d", i)}
				c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Arguments: json.RawMessage(`{"amount":1}`), Owner: "o"})
				if err == nil {
					_, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "o", Fence: c.Record.Fence, Result: result})
				}
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
		t.Fatalf("seed: %v", err)
	}
}

// An export streams: its live heap stays within a few pages of records
// however many it writes (4,000 records of 8 KB are 32 MB; the export
// holds at most three pages of 200 at a time, one read, one encoded ahead
// and one written, each record also as its redacted copy and encoded line:
// about 12 MB at the worst moment, 8-11 MB measured; the bound is half of
// the records), and what it allocates per record is bounded. Measured by
// allocation, not by time.
func TestExportMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 4,000 records")
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const n = 4000
	seedLarge(t, st, n)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := &heapSampler{}
	got, err := audit.Export(context.Background(), st, out, audit.Options{Tenant: "acme"})
	if err != nil || got != n {
		t.Fatalf("Export = %d, %v; want %d records", got, err, n)
	}
	runtime.ReadMemStats(&after)
	const liveBound = 16 << 20
	if grew := int64(out.peak) - int64(before.HeapAlloc); grew > liveBound {
		t.Errorf("the live heap grew by %d MB during the export of %d MB of records; want at most %d MB: it holds more than three pages", grew>>20, n*8>>10, liveBound>>20)
	}
	const perRecordBound = 128 << 10
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > perRecordBound {
		t.Errorf("the export allocated %d KB per record; want at most %d KB", per>>10, perRecordBound>>10)
	}
	t.Logf("live heap growth %d KB, %d KB allocated per record", (int64(out.peak)-int64(before.HeapAlloc))>>10, (after.TotalAlloc-before.TotalAlloc)/n>>10)
}

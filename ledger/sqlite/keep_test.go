package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/mcpledger/mcpledger/internal/gctest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// ctxKey carries a caller's marker in its context.
type ctxKey struct{}

// A write keeps nothing of its caller once it has returned: the writer
// reuses its batch array, and an op left in it held the caller's context
// and everything reachable from it (behind a proxy, a host's whole
// session) until a later batch overwrote it. Each claim's context carries
// a marker of its own; once the claims have returned, every marker must
// be collected.
func TestWriterKeepsNoCallerContext(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const n = 16
	markers := make([]weak.Pointer[[4096]byte], n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		marker := new([4096]byte)
		markers[i] = weak.Make(marker)
		ctx := context.WithValue(context.Background(), ctxKey{}, marker)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := st.Claim(ctx, claimReq(fmt.Sprintf("k%d", i), "owner-1"))
			if err == nil && !c.Won {
				err = fmt.Errorf("claim k%d not won", i)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A claim returns once its op is done, while the writer may still be
	// finishing the batch: collect until the markers are gone, up to 10 s.
	// Kept by the batch array, they would stay until the next batch.
	if kept := gctest.Kept(10*time.Second, markers); kept > 0 {
		t.Errorf("%d of %d claims' contexts still reachable 10 s after the claims returned; the store must drop them", kept, n)
	}
}

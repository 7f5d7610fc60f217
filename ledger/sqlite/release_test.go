package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// ReleaseMemory closes the idle read connections (and with them their
// page caches) and leaves the store working: reads open a connection
// again, and writes running alongside are not disturbed.
func TestReleaseMemory(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var _ ledger.MemoryReleaser = st
	if _, err := st.Claim(ctx, claimReq("k0", "owner-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, claimReq("k0", "").ID); err != nil {
		t.Fatal(err)
	}
	if idle := sqlite.ReadStats(st).Idle; idle < 1 {
		t.Fatalf("idle read connections after a read = %d; want at least 1", idle)
	}
	if err := st.ReleaseMemory(ctx); err != nil {
		t.Fatalf("ReleaseMemory = %v", err)
	}
	if s := sqlite.ReadStats(st); s.Idle != 0 || s.OpenConnections != 0 {
		t.Errorf("read pool after ReleaseMemory: %d open, %d idle; want none", s.OpenConnections, s.Idle)
	}
	if _, err := st.Get(ctx, claimReq("k0", "").ID); err != nil {
		t.Fatalf("Get after ReleaseMemory = %v", err)
	}
	if idle := sqlite.ReadStats(st).Idle; idle != 1 {
		t.Errorf("idle read connections after the next read = %d; want 1 (the pool keeps them again)", idle)
	}

	// Releases while claims and reads run: every claim wins its own key.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", i+1)
			c, err := st.Claim(ctx, claimReq(key, "owner-1"))
			if err == nil && !c.Won {
				err = fmt.Errorf("claim %s not won", key)
			}
			if err == nil {
				_, err = st.Get(ctx, claimReq(key, "").ID)
			}
			if err != nil {
				errs <- err
			}
		}()
		if i%4 == 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := st.ReleaseMemory(ctx); err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseMemory(ctx); err != nil {
		t.Errorf("ReleaseMemory on a closed store = %v; want nil (nothing to give back)", err)
	}
}

package postgres_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// open opens a Store and closes it when t ends.
func open(t testing.TB, url string, opts *postgres.Options) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open(%s) = %v", pgtest.Env, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return st
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

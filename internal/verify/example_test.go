package verify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpledger/mcpledger/internal/verify"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcptest"
)

// Two guarantees against a SQLite ledger and the in-memory test server,
// which counts its own executions.
func ExampleRun() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "verify-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	srv := mcptest.New(nil)
	_, err = verify.Run(ctx, verify.Target{
		Store:   st,
		Dial:    srv.Transport,
		Tool:    "write",
		Args:    map[string]any{"id": "order-7", "amount": 1.0},
		Count:   func(_ context.Context, key string) (int, error) { return srv.Executions(key), nil },
		CountBy: "the test server",
	}, []string{"G1", "G3"}, func(r verify.Result) { fmt.Println(r.ID, r.Name, r.Status) })
	if err != nil {
		panic(err)
	}
	// Output:
	// G1 concurrent callers pass
	// G3 key reuse pass
}

package peer_test

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// callInput is the workflow's input: what it needs to make the call.
type callInput struct {
	Key string `json:"key"`
	ID  string `json:"id"`
}

// dbosContender launches DBOS on cfg's system database with one workflow:
// the MCP call as its one step, the workflow ID the operation's key (the
// key also goes in _meta, as the mcpledger client sends it). Running a
// finished ID again returns the recorded result without running the step.
func dbosContender(b *testing.B, cfg dbos.Config) *contender {
	srv, cs := newServer(b)
	cfg.AppName = "mcpledger-peer"
	cfg.Logger = slog.New(slog.DiscardHandler)
	dc, err := dbos.NewContext(context.Background(), cfg)
	if err != nil {
		b.Fatalf("dbos.NewContext = %v", err)
	}
	b.Cleanup(func() {
		if err := dbos.Shutdown(dc, 10*time.Second); err != nil {
			b.Errorf("dbos.Shutdown = %v", err)
		}
	})
	wf := func(ctx dbos.Context, in callInput) (*mcp.CallToolResult, error) {
		return dbos.RunAsStep(ctx, func(ctx context.Context) (*mcp.CallToolResult, error) {
			p := write(in.ID, 1)
			p.Meta = mcp.Meta{client.MetaKey: in.Key}
			return cs.CallTool(ctx, p)
		}, dbos.WithStepName("call_tool"))
	}
	dbos.RegisterWorkflow(dc, wf, dbos.WithWorkflowName("mcp_call"))
	if err := dbos.Launch(dc); err != nil {
		b.Fatalf("dbos.Launch = %v", err)
	}
	return &contender{srv: srv, call: func(_ context.Context, key, id string) (*mcp.CallToolResult, bool, error) {
		h, err := dbos.RunWorkflow(dc, wf, callInput{Key: key, ID: id}, dbos.WithWorkflowID(key))
		if err != nil {
			return nil, false, err
		}
		res, err := h.GetResult()
		return res, false, err
	}}
}

// BenchmarkDBOSSQLite is DBOS on a SQLite system database, with the
// settings DBOS opens it with (WAL, synchronous=NORMAL: a commit is not
// on disk before it returns).
func BenchmarkDBOSSQLite(b *testing.B) {
	run(b, dbosContender(b, dbos.Config{DatabaseURL: "sqlite:" + filepath.Join(b.TempDir(), "dbos.db")}))
}

// BenchmarkDBOSPostgres is DBOS on a PostgreSQL system database, in a
// schema of its own, with DBOS's default pool.
func BenchmarkDBOSPostgres(b *testing.B) {
	u, err := url.Parse(pgtest.Schema(b))
	if err != nil {
		b.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	run(b, dbosContender(b, dbos.Config{DatabaseURL: pgtest.URL(b), DatabaseSchema: schema}))
}

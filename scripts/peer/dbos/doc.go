// Package peer measures mcpledger beside DBOS Transact Go, the durable
// workflow library a Go user might pick instead, on the same MCP call.
//
// Everything here is benchmarks, in a module of its own so that the
// library's go.mod never requires DBOS. Each contender wraps the same
// in-memory go-sdk call (the mcptest "write" tool, as in client's
// BenchmarkCallToolBare), keyed by an operation id:
//
//   - DBOS: a workflow whose ID is the operation id, with the call as its
//     one step; running a finished ID again returns the recorded result.
//   - mcpledger: client.CallTool with the id as the idempotency key.
//
// Each contender is one benchmark with four sub-benchmarks: first (a fresh
// id each op, one caller), first_64way (64 callers), replay (finished ids
// run again, one caller) and replay_64way. go run ./scripts/benchmarks
// runs them in every round and sets them against each other:
//
//	cd scripts/peer/dbos && go test -run '^$' -bench . -benchtime 2s
//
// PostgreSQL contenders need MCPLEDGER_TEST_POSTGRES, as the library's
// own tests do; each gets a schema of its own, dropped when it ends.
package peer

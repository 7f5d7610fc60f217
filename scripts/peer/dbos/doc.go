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
// Every benchmark has four sub-benchmarks: first (a fresh id each op, one
// caller), first_64way (64 callers), replay (finished ids run again, one
// caller) and replay_64way. BenchmarkInterleavedSQLite and
// BenchmarkInterleavedPostgres run all their contenders turn about in one
// loop and report each one's time per operation, so that on a busy
// machine every contender meets the same load; go run ./scripts/benchmarks
// runs them in every round and takes its ratios from them:
//
//	cd scripts/peer/dbos && go test -run '^$' -bench Interleaved -benchtime 2s
//
// BenchmarkBare, BenchmarkDBOSSQLite, BenchmarkLedgerFull and the others
// measure one contender at a time, for a profile of one of them:
//
//	go test -run '^$' -bench 'DBOSSQLite/^first$' -cpuprofile cpu.out
//
// PostgreSQL contenders need MCPLEDGER_TEST_POSTGRES, as the library's
// own tests do; each gets a schema of its own, dropped when it ends.
package peer

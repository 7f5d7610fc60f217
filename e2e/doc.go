// Package e2e holds the kill suite: the agent (package client, e2e/agent),
// agentctl proxy and the payments example server run as real processes,
// over stdio and streamable HTTP on 127.0.0.1, and every iteration SIGKILLs
// one of them at a random point or at one of the payments server's fault
// hooks, restarts what died, lets the agent finish its keys, and checks the
// promise "one effect per key":
//
//   - no key made more than one payment, and the downstream applied each
//     payment at most once;
//   - every key the agent issued is either answered in agreement with the
//     payments table, or its outcome is UNKNOWN (or provably not sent) in
//     one of the ledgers: the agent's, the proxy's or the server's;
//   - every SQLite file passes PRAGMA integrity_check.
//
// Every third iteration the agent and the proxy write their outcomes
// behind (ledger.WriteBehind, agentctl --durability write-behind); the
// figures come per mode, and duplicates must be 0 in both.
//
// UNKNOWN records are then reconciled the way an operator would, with
// "payments -reconcile KEY" and "agentctl ledger reconcile KEY --as …".
//
//	go test -race -run TestKill ./e2e/
//
// The package has no API; see README.md for the knobs.
package e2e

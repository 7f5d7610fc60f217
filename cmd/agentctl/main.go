// Command agentctl calls MCP tools through the mcpledger idempotency ledger,
// serves the ledger's own tools to any MCP host, and lets a person inspect
// and reconcile the ledger.
//
//	agentctl tools --server 'go run ./examples/payments'
//	agentctl call --server 'go run ./examples/payments' --key order-42 \
//	    create_payment amount_cents=1250 currency=EUR payee=acme
//	agentctl ledger list --state unknown
//	agentctl ledger reconcile order-42 --as succeeded --note "seen in the bank statement"
//
// Exit codes: 0 done, 1 tool error or failed, 2 bad usage or input (also
// arguments the server rejected before the tool ran), 3 denied, 4 outcome
// unknown (or still in progress), 5 upstream or ledger unreachable, 6
// awaiting approval, 130 interrupted with nothing final recorded. They are
// mapped from errors in one place, exit.go.
//
// The CLI is built on github.com/spf13/cobra: it is the most used Go CLI
// library, it generates help and shell completion for bash, zsh, fish and
// PowerShell, and its one-value-per-command model lets each subcommand live
// in its own file and register itself (see commands below).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}

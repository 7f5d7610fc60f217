//go:build pprof

package main

// Built with -tags pprof (scripts/loadbench -profile), the program serves
// net/http/pprof where MCPLEDGER_PPROF says; normal builds do not.
import _ "github.com/mcpledger/mcpledger/internal/loadprofile"

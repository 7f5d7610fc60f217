// Package loadprofile serves net/http/pprof from a program built for a
// load benchmark. Importing it (agentctl and the payments example do, in
// builds with -tags pprof only; see scripts/loadbench -profile) starts,
// when MCPLEDGER_PPROF names a loopback address, a pprof server there,
// prints "pprof at http://ADDR/debug/pprof/" on stderr, and samples
// blocking and mutex contention for the block and mutex profiles. Normal
// builds never import it.
package loadprofile

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // the handlers, on http.DefaultServeMux
	"os"
	"runtime"
	"time"
)

// Env names the address to serve pprof on, e.g. 127.0.0.1:0.
const Env = "MCPLEDGER_PPROF"

func init() {
	addr := os.Getenv(Env)
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "pprof: %s=%q is not a loopback HOST:PORT; no profiles served\n", Env, addr)
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pprof: %v; no profiles served\n", err)
		return
	}
	// One sample per 10 µs spent blocked, and one contended mutex in 10:
	// enough to see convoys without slowing the program much.
	runtime.SetBlockProfileRate(10_000)
	runtime.SetMutexProfileFraction(10)
	fmt.Fprintf(os.Stderr, "pprof at http://%s/debug/pprof/\n", ln.Addr())
	go func() {
		srv := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		_ = srv.Serve(ln) // ends with the process
	}()
}

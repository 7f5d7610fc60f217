// Package process names the process that holds a lease and tells whether
// it still runs, so that a follower on the same host learns at once that
// an owner is gone instead of waiting out its lease:
//
//	lc := &ledger.Lifecycle{Store: st, Owner: process.NewOwner("payments")}
//	...
//	if process.Gone(rec.Owner) { /* its lease can be ended now */ }
//
// It reads /proc on Linux, sysctl on macOS and the process table on
// Windows; elsewhere an owner is never known gone and its lease decides.
// The package knows nothing of the ledger: an owner is a string there.
package process

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Owner names the process that holds a lease: a label for people, and the
// host, boot, process id and process start time, so that a follower on the
// same host can tell at once that the owner is gone instead of waiting out
// its lease. Its String form is what records store; Parse reads it
// back. An owner string that does not parse (an older record, a label set
// by hand) is simply never known dead: its lease decides.
type Owner struct {
	Label string
	Host  string // the host name
	Boot  string // a short id of the host's current boot; empty where unknown
	PID   int
	Start uint64 // the process's start time in clock ticks since boot; 0 where unknown
}

// String is label@host#pid.start.boot.
func (o Owner) String() string {
	return fmt.Sprintf("%s@%s#%d.%d.%s", o.Label, o.Host, o.PID, o.Start, o.Boot)
}

// Parse reads an Owner from its String form.
func Parse(s string) (Owner, bool) {
	at := strings.LastIndexByte(s, '@')
	hash := strings.LastIndexByte(s, '#')
	if at < 0 || hash < at {
		return Owner{}, false
	}
	parts := strings.SplitN(s[hash+1:], ".", 3)
	if len(parts) != 3 {
		return Owner{}, false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return Owner{}, false
	}
	start, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return Owner{}, false
	}
	return Owner{Label: s[:at], Host: s[at+1 : hash], PID: pid, Start: start, Boot: parts[2]}, true
}

// Self is the Owner of this process with the given label.
func Self(label string) Owner {
	me := self()
	me.Label = label
	return me
}

// Of is the Owner of process pid of this host, with the given label:
// what that process would write as its own owner. A supervisor (or a test)
// uses it to name another process's leases.
func Of(pid int, label string) (Owner, error) {
	start, err := processStart(pid)
	if err != nil {
		return Owner{}, fmt.Errorf("process: pid %d: %w", pid, err)
	}
	me := self()
	return Owner{Label: label, Host: me.Host, Boot: me.Boot, PID: pid, Start: start}, nil
}

// NewOwner is Self(label).String(): the owner string for leases this
// process takes. A label names the program ("agentctl", "payments-server");
// it need not be unique.
func NewOwner(label string) string {
	if label == "" {
		label = "mcpledger"
	}
	return Self(label).String()
}

// Gone reports whether owner is a process of this host (same host
// name and boot) that no longer runs: no process has its pid, or the one
// that has it started at another time. It is false whenever that cannot be
// known (another host, an unparsable owner, a system without /proc).
func Gone(owner string) bool {
	o, ok := Parse(owner)
	if !ok {
		return false
	}
	me := self()
	if me.Boot == "" || o.Boot != me.Boot || o.Host != me.Host || o.Start == 0 {
		return false
	}
	start, err := processStart(o.PID)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	return start != o.Start
}

// Local reports whether owner is a process of this host whose liveness
// can be checked (Gone can say true of it).
func Local(owner string) bool {
	o, ok := Parse(owner)
	if !ok {
		return false
	}
	me := self()
	return me.Boot != "" && o.Boot == me.Boot && o.Host == me.Host && o.Start != 0
}

var (
	selfOnce sync.Once
	selfInfo Owner // guarded by selfOnce: written once, then read only
)

func self() Owner {
	selfOnce.Do(func() {
		host, err := os.Hostname()
		if err != nil {
			host = "unknown-host"
		}
		selfInfo = Owner{Host: host, PID: os.Getpid(), Boot: bootID()}
		if start, err := processStart(selfInfo.PID); err == nil {
			selfInfo.Start = start
		} else {
			selfInfo.Boot = "" // without a start time a pid proves nothing
		}
	})
	return selfInfo
}

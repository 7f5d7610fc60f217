package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpledger/mcpledger/ledger"
)

// kindOwnerDied is the error kind of a record the suite settled because
// the process holding its lease was killed.
const kindOwnerDied = "owner_killed"

// reapDeadOwners does what a supervisor does after a process died: the
// PROCESSING records in tenant whose lease belongs to a process of this
// host that no longer runs become UNKNOWN at once, instead of when their
// lease runs out. It returns how many it changed.
//
// The suite needs it for agentctl proxy, whose ledger client holds a 30s
// lease and has no sweeper: a record of a killed proxy would otherwise
// stay PROCESSING, and every retry of the key through the restarted proxy
// would wait on it until it gave up. The owner names its process
// (host:pid:random, see package client), which is what makes this safe:
// only records of processes known dead are touched.
func reapDeadOwners(ctx context.Context, st ledger.Store, tenant string) (int, error) {
	host, err := os.Hostname()
	if err != nil {
		return 0, err
	}
	var dead []*ledger.Record
	f := ledger.Filter{Tenant: tenant, State: ledger.StateProcessing, Limit: ledger.MaxPageSize}
	for {
		page, err := st.List(ctx, f)
		if err != nil {
			return 0, fmt.Errorf("list PROCESSING records: %w", err)
		}
		for _, r := range page.Records {
			if pid, ok := ownerPID(r.Owner, host); ok && !alive(pid) {
				dead = append(dead, r)
			}
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	n := 0
	for _, r := range dead {
		_, err := st.Transition(ctx, ledger.Transition{
			ID: r.ID, From: ledger.StateProcessing, To: ledger.StateUnknown, Owner: r.Owner,
			ErrorKind: kindOwnerDied, ErrorMessage: "the process holding the lease (" + r.Owner + ") was killed",
		})
		if errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateChanged) {
			continue // settled meanwhile
		}
		if err != nil {
			return n, fmt.Errorf("settle %s of a dead owner: %w", r.Key, err)
		}
		n++
	}
	return n, nil
}

// ownerPID parses a lease owner "host:pid:random" of this host.
func ownerPID(owner, host string) (int, bool) {
	rest, ok := strings.CutPrefix(owner, host+":")
	if !ok {
		return 0, false
	}
	pidText, _, _ := strings.Cut(rest, ":")
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// waitGone waits up to d for pid, which need not be a child of the test,
// to end. A pidfd becomes readable when its process ends.
func waitGone(pid int, d time.Duration) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("process %d still runs after %v", pid, d)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll pidfd of %d: %w", pid, err)
		}
		if n > 0 {
			return nil
		}
	}
}

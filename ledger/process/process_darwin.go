package process

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// bootID names this boot of the host (kern.bootsessionuuid). The start
// times below are wall-clock times, so a pid reused after a reboot has
// another start time anyway; the boot only narrows the comparison.
func bootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil || id == "" {
		return "wall"
	}
	id = strings.ReplaceAll(id, "-", "")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// processStart is the process's start time in microseconds since the
// epoch (kern.proc.pid). A pid with no process (the kernel returns no
// entry: EIO from x/sys) or a zombie gives an error wrapping
// os.ErrNotExist.
func processStart(pid int) (uint64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if errors.Is(err, unix.EIO) {
		return 0, fmt.Errorf("process: no process %d: %w", pid, os.ErrNotExist)
	}
	if err != nil {
		return 0, err
	}
	const zombie = 5 // SZOMB, sys/proc.h
	if kp.Proc.P_stat == zombie {
		return 0, fmt.Errorf("process: process %d has exited: %w", pid, os.ErrNotExist)
	}
	t := kp.Proc.P_starttime
	return uint64(t.Sec)*1e6 + uint64(t.Usec), nil
}

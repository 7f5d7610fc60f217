package process

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// bootID: Windows keeps no boot id a process can read cheaply. The start
// times below are wall-clock times, so a pid reused after a reboot has
// another start time anyway; a fixed name keeps the comparison on.
func bootID() string { return "wall" }

// processStart is the process's creation time in 100 ns intervals since
// 1601 (GetProcessTimes). A pid with no process, or one that has exited,
// gives an error wrapping os.ErrNotExist.
func processStart(pid int) (uint64, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return 0, fmt.Errorf("process: no process %d: %w", pid, os.ErrNotExist)
	}
	if err != nil {
		return 0, err
	}
	defer func() { _ = windows.CloseHandle(h) }() // a query handle: nothing to flush
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return 0, err
	}
	const stillActive = 259 // STILL_ACTIVE
	if code != stillActive {
		return 0, fmt.Errorf("process: process %d has exited: %w", pid, os.ErrNotExist)
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, err
	}
	return uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime), nil
}

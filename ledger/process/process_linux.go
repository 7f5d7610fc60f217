package process

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// bootID names this boot of the host, so that a pid and start time (ticks
// since boot) are compared only within one boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	id := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// processStart reads field 22 of /proc/PID/stat: the start time in clock
// ticks since boot. A pid with no process, or whose process has exited and
// waits to be reaped (a zombie), gives an error wrapping os.ErrNotExist.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	end := strings.LastIndexByte(string(b), ')')
	if end < 0 {
		return 0, errors.New("process: unreadable /proc stat")
	}
	fields := strings.Fields(string(b[end+1:]))
	const startField = 22 - 3 // fields after ')' begin at field 3
	if len(fields) <= startField {
		return 0, errors.New("process: short /proc stat")
	}
	if state := fields[0]; state == "Z" || state == "X" {
		return 0, fmt.Errorf("process: process %d has exited: %w", pid, os.ErrNotExist)
	}
	return strconv.ParseUint(fields[startField], 10, 64)
}

//go:build unix

package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func shellSession() string {
	sid, err := unix.Getsid(0)
	if err != nil {
		return "cli-" + strconv.Itoa(os.Getppid())
	}
	if start := processStart(sid); start != "" {
		return "cli-" + strconv.Itoa(sid) + "." + start
	}
	return "cli-" + strconv.Itoa(sid)
}

//go:build !unix

package main

import (
	"os"
	"strconv"
)

// shellSession falls back to the parent process (the shell, when agentctl is
// run directly) where there is no terminal session id.
func shellSession() string {
	return "cli-" + strconv.Itoa(os.Getppid())
}

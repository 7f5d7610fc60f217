//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group led by pid.
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

//go:build !unix

package main

import (
	"errors"
	"os/exec"
)

func ownGroup(*exec.Cmd) {}

func killGroup(int) error { return errors.New("killing a process group needs a unix system") }

//go:build !unix

package main

import (
	"io/fs"
	"os"
)

// writable reports whether path exists and is not marked read-only; other
// systems have no access(2) to ask.
func writable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o200 == 0 {
		return fs.ErrPermission
	}
	return nil
}

func diskFull(string) bool { return false }

func fileMode(path string) fs.FileMode {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Mode().Perm()
}

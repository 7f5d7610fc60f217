//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// writable reports whether this process may write path: nil, or the
// reason (fs.ErrNotExist, EACCES, EROFS).
func writable(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	return unix.Access(path, unix.W_OK)
}

// diskFull reports whether the file system holding path has no block left
// for this process.
func diskFull(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return false
	}
	return st.Bavail == 0
}

func fileMode(path string) fs.FileMode {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Mode().Perm()
}

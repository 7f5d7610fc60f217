//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// walWriteLock is the byte of the -shm file that SQLite's unix VFS locks
// while a connection writes a WAL database: UNIX_SHM_BASE
// ((22+SQLITE_SHM_NLOCK)*4 = 120) plus WAL_WRITE_LOCK (0).
const walWriteLock = 120

// LockHolder returns the process id of the process that holds the write
// lock of the ledger at path, 0 when no other process holds it, or -1
// when one does but the kernel does not say which (an open file
// description lock, as the pure-Go driver of a CGO_ENABLED=0 build takes). It asks
// the kernel which process would block a write lock (fcntl F_GETLK) and
// takes no lock itself; the calling process's own locks are not seen.
func LockHolder(path string) (int, error) {
	f, err := os.OpenFile(path+"-shm", os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // no WAL index: no one writes in WAL mode
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: lock holder of %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only: it asks who holds a lock
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: walWriteLock, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("sqlite: lock holder of %s: %w", path, err)
	}
	if lk.Type == unix.F_UNLCK {
		return 0, nil
	}
	if lk.Pid <= 0 {
		return -1, nil
	}
	return int(lk.Pid), nil
}

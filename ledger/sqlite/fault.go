package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Faults of the file under a read-write Store, for errors.Is: the write
// failed and nothing of it was stored.
var (
	// ErrFull: the disk (or the file system's quota) holding the ledger
	// has no room for the write.
	ErrFull = errors.New("sqlite: the disk holding the ledger is full")
	// ErrUnwritable: the ledger file, its -wal or -shm file, or its file
	// system cannot be written (a file mode, a read-only mount).
	ErrUnwritable = errors.New("sqlite: the ledger cannot be written")
)

// FaultError is a write that the file under the ledger refused. It
// matches its Kind (ErrFull or ErrUnwritable) with errors.Is.
type FaultError struct {
	Path string
	Kind error
	err  error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("sqlite: %s: %v: %v", e.Path, e.err, e.Kind)
}

func (e *FaultError) Is(target error) bool { return target == e.Kind }

func (e *FaultError) Unwrap() error { return e.err }

// Companions are the files SQLite keeps beside a ledger in WAL mode.
func Companions(path string) []string { return []string{path + "-wal", path + "-shm"} }

// widenCompanions gives a -wal or -shm file narrower than the ledger the
// ledger's own mode. SQLite creates them with the ledger's mode; one made
// while the ledger was read-only stays read-only after the ledger is
// writable again, and every later write fails on it. Their content is the
// ledger's, so the ledger's mode is never too wide for them. A file this
// process cannot change is left as it is (the error then names it).
func widenCompanions(path string, mode fs.FileMode) {
	for _, c := range Companions(path) {
		fi, err := os.Stat(c)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if have := fi.Mode().Perm(); have|mode == mode && have != mode {
			_ = os.Chmod(c, mode) // best effort: see above
		}
	}
}

// DamagedError is a ledger file whose pages SQLite cannot read (it was cut
// short or overwritten): SQLITE_CORRUPT, or SQLITE_NOTADB past a valid
// header. It matches ErrDamaged and, as it always did, ErrNotDatabase.
type DamagedError struct {
	Path string
	Err  error // SQLite's own error ("database disk image is malformed")
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("sqlite: %s is damaged (%v); restore it from a backup", e.Path, e.Err)
}

func (e *DamagedError) Is(target error) bool { return target == ErrDamaged || target == ErrNotDatabase }

func (e *DamagedError) Unwrap() error { return e.Err }

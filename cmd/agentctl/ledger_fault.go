package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// ledgerFault explains a SQLite ledger at path that refused a write before
// anything was sent: a full disk, a file (the ledger, its -wal or -shm) or
// a file system that cannot be written (exit 5, nothing ran), a damaged
// file (exit 2). It returns nil when err is none of these.
func ledgerFault(path string, err error) error {
	if path == "" || err == nil {
		return nil
	}
	if errors.Is(err, sqlite.ErrFull) || errors.Is(err, syscall.ENOSPC) || diskFull(path) {
		return reasonf(reasonLedgerUnreachable, "the disk holding the ledger %s is full; nothing was sent; free space there (or pass --ledger on another disk), then run the same command again", path)
	}
	problems, fixes := writeProblems(path)
	if len(problems) > 0 {
		return reasonf(reasonLedgerUnreachable, "the ledger %s cannot be written: %s; nothing was sent; %s, then run the same command again", path, strings.Join(problems, ", "), strings.Join(fixes, " and "))
	}
	if errors.Is(err, sqlite.ErrUnwritable) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return reasonf(reasonLedgerUnreachable, "the ledger %s cannot be written (%v); nothing was sent; make it and its -wal and -shm files writable, then run the same command again", path, oneLine(err.Error()))
	}
	if errors.Is(err, sqlite.ErrDamaged) {
		return reasonf(reasonLedgerInvalid, "the ledger %s is damaged (%s); nothing was sent; restore it from a backup, move it away so that a new ledger starts there, or pass --ledger with another file", path, damage(err))
	}
	return nil
}

// damagedLedger is the error of a command that met a damaged SQLite
// ledger (sqlite.ErrDamaged) at path: exit 2, as the README says.
func damagedLedger(path string, err error) error {
	return reasonf(reasonLedgerInvalid, "the ledger %s is damaged (%s): its records cannot be read or written as it is; restore it from a backup, or pass --ledger with another ledger", path, damage(err))
}

// damage is what SQLite said of a damaged ledger ("database disk image
// is malformed"), else the whole error on one line.
func damage(err error) string {
	if de, ok := errors.AsType[*sqlite.DamagedError](err); ok {
		return "SQLite: " + oneLine(de.Err.Error())
	}
	return oneLine(err.Error())
}

// storeFault turns an error a command met in the ledger's store, without
// an exit code of its own, into the error a person can act on: a damaged
// SQLite ledger (exit 2). Other errors are returned as they are.
func storeFault(err error) error {
	if _, ok := errors.AsType[*exitError](err); ok || err == nil {
		return err
	}
	if de, ok := errors.AsType[*sqlite.DamagedError](err); ok {
		return damagedLedger(de.Path, err)
	}
	return err
}

// writeProblems says what keeps path's ledger from being written, and the
// fix of each: a read-only file system, a file mode, a folder in which
// SQLite cannot create the -wal and -shm files.
func writeProblems(path string) (problems, fixes []string) {
	switch err := writable(path); {
	case errors.Is(err, syscall.EROFS):
		return []string{"its file system is mounted read-only"}, []string{"remount it read-write (or pass --ledger on another disk)"}
	case errors.Is(err, fs.ErrNotExist):
		// A new ledger: the folder below says whether it can be made.
	case err != nil:
		problems = append(problems, fmt.Sprintf("%s has mode %s", path, modeText(path)))
		fixes = append(fixes, "chmod u+w "+path)
	}
	mode := fileMode(path)
	var narrow []string
	missing := false
	for _, c := range sqlite.Companions(path) {
		err := writable(c)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = true
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s has mode %s", c, modeText(c)))
			narrow = append(narrow, c)
		}
	}
	if len(narrow) > 0 {
		// The ledger's own mode, writable by its owner once fixed.
		mode |= 0o600
		fixes = append(fixes, fmt.Sprintf("chmod %04o %s (as the ledger's owner)", mode, strings.Join(narrow, " ")))
	}
	if dir := filepath.Dir(path); missing && writable(dir) != nil {
		problems = append(problems, fmt.Sprintf("the folder %s cannot be written, and SQLite creates the ledger's -wal and -shm files there", dir))
		fixes = append(fixes, "make "+dir+" writable")
	}
	return problems, fixes
}

// modeText is path's permission bits, as chmod takes them.
func modeText(path string) string {
	return fmt.Sprintf("%04o", fileMode(path))
}

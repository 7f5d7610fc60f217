package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// ledgerBackends maps a --ledger URL scheme to the Store serving it. A value
// without a registered scheme is a SQLite file path; other backends add
// themselves from their own file (store_postgres.go).
var ledgerBackends = map[string]func(ctx context.Context, url string) (ledger.Store, error){}

// access says what a command does with the ledger.
type access int

const (
	readWrite access = iota
	// readOnly commands (list, show, stats) open the ledger read-only:
	// they never create, migrate or write it. A missing SQLite file is
	// almost always a mistyped --ledger, and an empty new file would hide
	// it; a file others may only read can still be inspected.
	readOnly
	// existing commands (reconcile, purge, approve, deny, rekey, ui)
	// write, but only to a ledger that exists: like readOnly, they never
	// create one.
	existing
)

// defaultLedgerPath is $XDG_STATE_HOME/mcpledger/ledger.db, else
// ~/.local/state/mcpledger/ledger.db (the XDG base directory default).
func (a *app) defaultLedgerPath() (string, error) {
	if dir := a.getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "mcpledger", "ledger.db"), nil
	}
	home := a.getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", exitf(exitUsage, "no home directory for the default ledger: pass --ledger PATH or set MCPLEDGER_LEDGER")
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "mcpledger", "ledger.db"), nil
}

// ledger opens the ledger named by --ledger once per run.
func (a *app) ledger(ctx context.Context, mode access) (ledger.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	target := a.ledgerURL
	if target == "" {
		p, err := a.defaultLedgerPath()
		if err != nil {
			return nil, err
		}
		target = p
	}
	if scheme, _, ok := strings.Cut(target, "://"); ok {
		open, found := ledgerBackends[strings.ToLower(scheme)]
		if !found {
			return nil, reasonf(reasonLedgerInvalid, "--ledger %s: no ledger backend for %q; pass a SQLite file path or a postgres:// URL", postgres.MaskDSN(target), scheme)
		}
		st, err := open(ctx, target)
		if err != nil {
			return nil, err
		}
		return a.keep(st, mode)
	}
	st, err := a.openSQLite(ctx, target, mode)
	if err != nil {
		return nil, err
	}
	return a.keep(a.timed(st), mode)
}

func (a *app) openSQLite(ctx context.Context, path string, mode access) (ledger.Store, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && mode != readWrite:
		return nil, &exitError{reason: reasonLedgerInvalid, err: noLedger(fmt.Sprintf(
			"no ledger at %s: nothing has been recorded there yet, or --ledger names the wrong file", path))}
	case errors.Is(err, fs.ErrNotExist) && a.ledgerURL != "":
		// A path the user named: its folder must exist. Creating it would
		// turn a mistyped --ledger into a new ledger nobody looks at.
		dir := filepath.Dir(path)
		if fi, derr := os.Stat(dir); derr != nil || !fi.IsDir() {
			return nil, reasonf(reasonLedgerInvalid, "the folder %s of the ledger %s does not exist; create it (mkdir -p %s) or pass --ledger with a path in an existing folder", dir, path, dir)
		}
	case errors.Is(err, fs.ErrNotExist):
		// The default location is created, and kept private: the ledger
		// holds call arguments.
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, reasonf(reasonLedgerInvalid, "cannot create the ledger folder %s: %v; pass --ledger with a writable path", filepath.Dir(path), err)
		}
	case err != nil:
		return nil, reasonf(reasonLedgerInvalid, "cannot read the ledger %s: %v; pass --ledger with a readable SQLite file", path, err)
	case info.IsDir():
		return nil, reasonf(reasonLedgerInvalid, "the ledger %s is a directory; pass --ledger with a SQLite file path", path)
	}
	if err == nil && mode == existing {
		if err := readOnlyLedger(path); err != nil {
			return nil, err
		}
	}
	st, err := sqlite.Open(ctx, path, &sqlite.Options{
		ReadOnly:    mode == readOnly,
		BusyTimeout: a.wait,
		Logger:      a.warnLogger(),
	})
	switch {
	case err == nil:
		a.sqlitePath = path
		return st, nil
	case errors.Is(err, sqlite.ErrNoLedger):
		return nil, &exitError{reason: reasonLedgerInvalid, err: noLedger(fmt.Sprintf(
			"no ledger at %s: the file is empty, nothing has been recorded there yet; run agentctl call to record something, or pass --ledger with another file", path))}
	case errors.Is(err, sqlite.ErrSchemaTooOld):
		return nil, reasonf(reasonLedgerInvalid, "the ledger %s was written by an older agentctl and needs a migration, which this read-only command does not run; run any agentctl call on it once, then try again", path)
	case errors.Is(err, sqlite.ErrBusy):
		return nil, a.lockedError(err)
	case errors.Is(err, sqlite.ErrDamaged):
		return nil, damagedLedger(path, err)
	case errors.Is(err, sqlite.ErrWALUnreadable):
		return nil, reasonf(reasonLedgerUnreachable, "cannot read the ledger where it is: %s, with --ledger naming the copy", strings.TrimPrefix(err.Error(), "sqlite: "))
	}
	if mode != readOnly && !errors.Is(err, sqlite.ErrNotDatabase) {
		if fe := ledgerFault(path, err); fe != nil {
			return nil, fe
		}
	}
	return nil, reasonf(reasonLedgerInvalid, "cannot open the ledger %s: %v; check the file, its folder and the -wal and -shm files beside it, or pass --ledger with another ledger", path, oneLine(err.Error()))
}

// readOnlyLedger is the error of a command that writes to the existing
// ledger at path (approve, deny, reconcile, purge, rekey, ui), when this
// process cannot write it (a read-only mount, a file mode, a folder that
// cannot take the -wal and -shm files): nil when it can. Saying so before
// the command starts beats a failed write after it has asked a person.
func readOnlyLedger(path string) error {
	problems, fixes := writeProblems(path)
	if len(problems) == 0 {
		return nil
	}
	return reasonf(reasonLedgerUnreachable, "the ledger %s is read-only here (%s), and this command writes to it; nothing was written; agentctl ledger list, show, export and stats read it as it is; to write it, %s, then run the same command again",
		path, strings.Join(problems, ", "), strings.Join(fixes, " and "))
}

// noLedger is the error of a read-only command on a ledger that does not
// exist yet (no file, or an empty one): nothing was ever recorded there.
type noLedger string

func (e noLedger) Error() string { return string(e) }

func (a *app) close() error {
	if a.closeStore == nil {
		return nil
	}
	err := a.closeStore()
	a.store, a.closeStore = nil, nil
	return err
}

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
	// readOnly commands never create a ledger: a missing SQLite file is
	// almost always a mistyped --ledger, and an empty new file would hide it.
	readOnly
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
			return nil, exitf(exitUsage, "--ledger %s: no ledger backend for %q; pass a SQLite file path or a postgres:// URL", redactURL(target), scheme)
		}
		st, err := open(ctx, target)
		if err != nil {
			return nil, err
		}
		return a.keep(st, mode)
	}
	st, err := openSQLite(ctx, target, mode)
	if err != nil {
		return nil, err
	}
	return a.keep(st, mode)
}

func openSQLite(ctx context.Context, path string, mode access) (ledger.Store, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && mode == readOnly:
		return nil, exitf(exitUsage, "no ledger at %s: nothing has been recorded there yet, or --ledger names the wrong file", path)
	case errors.Is(err, fs.ErrNotExist):
		// The ledger holds call arguments: keep its folder private.
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, exitf(exitUsage, "cannot create the ledger folder %s: %v; pass --ledger with a writable path", filepath.Dir(path), err)
		}
	case err != nil:
		return nil, exitf(exitUsage, "cannot read the ledger %s: %v; pass --ledger with a readable SQLite file", path, err)
	case info.IsDir():
		return nil, exitf(exitUsage, "the ledger %s is a directory; pass --ledger with a SQLite file path", path)
	}
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return nil, exitf(exitUsage, "cannot open the ledger %s: %v; pass --ledger with a SQLite ledger file (or move this file away)", path, err)
	}
	return st, nil
}

func (a *app) close() error {
	if a.closeStore == nil {
		return nil
	}
	err := a.closeStore()
	a.store, a.closeStore = nil, nil
	return err
}

// redactURL hides the password of a database URL in messages.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return u
	}
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return fmt.Sprintf("%s://%s:%s@%s", scheme, user, "xxxxx", host)
	}
	return u
}

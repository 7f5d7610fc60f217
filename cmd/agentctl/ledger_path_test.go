package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A --ledger whose folder does not exist is refused before anything is
// sent, and the folder is not created: only the default location is.
func TestLedgerNamedFolderMustExist(t *testing.T) {
	e := newE2E(t)
	dir := filepath.Join(e.dir, "no", "such")
	path := filepath.Join(dir, "x.db")
	got := e.run(nil, append([]string{"--ledger", path, "call", "--server", e.server, "--yes", "--key", "nodir-1"}, pay...)...)
	got.wantExit(t, exitUsage, "the folder "+dir, "does not exist", "mkdir -p "+dir)
	if _, err := os.Stat(filepath.Join(e.dir, "no")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat %s = %v; want it not created", filepath.Join(e.dir, "no"), err)
	}
	if n := e.paymentsFor("nodir-1"); n != 0 {
		t.Errorf("payments for nodir-1 = %d; want 0", n)
	}
	// The default location is made on first use.
	env := []string{"MCPLEDGER_LEDGER=", "XDG_STATE_HOME=" + filepath.Join(e.dir, "state")}
	ee := *e
	ee.env = append(append([]string{}, e.env...), env...)
	ee.run(nil, append([]string{"call", "--server", e.server, "--yes", "--key", "nodir-2"}, pay...)...).wantExit(t, exitOK)
	if _, err := os.Stat(filepath.Join(e.dir, "state", "mcpledger", "ledger.db")); err != nil {
		t.Errorf("the default ledger was not created: %v", err)
	}
}

// Commands that only read or decide on records never create a ledger: a
// mistyped --ledger is an error, not an empty console or list.
func TestCommandsOnNoLedgerCreateNone(t *testing.T) {
	for _, args := range [][]string{
		{"ui", "--listen", "127.0.0.1:0"},
		{"ledger", "list"},
		{"ledger", "approve", "some-key", "--tool", "create_payment"},
		{"ledger", "deny", "some-key", "--tool", "create_payment", "--reason", "no"},
		{"ledger", "purge", "--older-than", "36h"},
	} {
		t.Run(args[0]+" "+args[1], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "typo.db")
			got := inProcess(t, map[string]string{"HOME": dir}, nil, append([]string{"--ledger", path}, args...)...)
			got.wantExit(t, exitUsage, "no ledger at "+path)
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat %s = %v; want no file created", path, err)
			}
		})
	}
}

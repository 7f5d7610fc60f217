package main

import (
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// envLockHolder makes this test binary hold the write lock of the SQLite
// ledger it names, print "locked", and let go when its stdin ends.
const envLockHolder = "AGENTCTL_TEST_LOCK_HOLDER"

// envSilentServer makes this test binary an MCP server that never answers
// and never reads its stdin; asked to stop with SIGTERM, it writes
// "SIGTERM" to the file it names and exits. Killed with SIGKILL, it writes
// nothing.
const envSilentServer = "AGENTCTL_TEST_SILENT_SERVER"

func init() {
	// Before TestMain: a re-executed test binary does its part and exits.
	if path := os.Getenv(envLockHolder); path != "" {
		if err := lockUntilEOF(path); err != nil {
			fmt.Fprintln(os.Stderr, "lock holder:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv(envSilentServer); path != "" {
		silentUntilSIGTERM(path)
	}
}

func silentUntilSIGTERM(path string) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		if err := os.WriteFile(path, []byte("SIGTERM\n"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "silent server:", err)
		}
		os.Exit(0)
	}()
	time.Sleep(time.Hour)
	os.Exit(0)
}

func lockUntilEOF(path string) error {
	db, err := sql.Open("sqlite3", "file:"+path+"?_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	fmt.Println("locked")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	return tx.Rollback()
}

// testChild is this test binary re-executed with env, running no tests.
func testChild(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

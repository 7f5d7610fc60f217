package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// Ledger faults before the tool runs: the call exits 5 (nothing ran) with
// one line naming the file and the fix, and runs once the fault is fixed.

// unprivileged is an e2e setup whose agentctl runs as a user the file
// modes bind: this one when it is not root, else nobody (uid 65534) in a
// folder of its own.
type unprivileged struct {
	*e2e
	cred *syscall.Credential // nil: this process's own user
}

func newUnprivileged(t *testing.T) *unprivileged {
	t.Helper()
	e := newE2E(t)
	u := &unprivileged{e2e: e}
	if os.Geteuid() != 0 {
		return u
	}
	// Root writes any file whatever its mode: run as nobody, in a folder
	// nobody owns, with binaries nobody can run.
	dir, err := os.MkdirTemp("", "agentctl-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{dir, binDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Skipf("cannot give a folder to uid 65534: %v", err)
	}
	u.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	e.dir, e.payDB = dir, filepath.Join(dir, "pay.db")
	e.server = "'" + e.payments + "' -db '" + e.payDB + "'"
	e.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "MCPLEDGER_LEDGER=" + e.ledgerPath()}
	return u
}

func (u *unprivileged) call(args ...string) outcome {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, u.agentctl, append([]string{"call", "--server", u.server, "--yes"}, args...)...)
	cmd.Env = u.env
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	return runOutcome(u.t, cmd)
}

// A ledger made read-only for a moment: the call exits 5 naming the file
// and chmod; once the ledger is writable again, the -wal and -shm files the
// failed run left as narrow as the ledger was are no obstacle.
func TestLedgerReadOnlyFileExits5(t *testing.T) {
	u := newUnprivileged(t)
	u.call(append([]string{"--key", "ro-1"}, pay...)...).wantExit(t, exitOK)
	path := u.ledgerPath()
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	got := u.call(append([]string{"--key", "ro-2"}, pay...)...)
	got.wantExit(t, exitUnreachable, path, "cannot be written", "mode 0400", "chmod u+w "+path, "nothing was sent")
	if n := u.paymentsFor("ro-2"); n != 0 {
		t.Errorf("payments for ro-2 = %d; want 0", n)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	u.call(append([]string{"--key", "ro-2"}, pay...)...).wantExit(t, exitOK)
	if n := u.paymentsFor("ro-2"); n != 1 {
		t.Errorf("payments for ro-2 after the fix = %d; want 1", n)
	}
	for _, c := range sqlite.Companions(path) {
		if fi, err := os.Stat(c); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o; want the ledger's 0600", c, fi.Mode().Perm())
		}
	}
}

// A -wal file another user left read-only, which this user cannot
// change: the message names it and the chmod that fixes it.
func TestLedgerForeignWalNamed(t *testing.T) {
	u := newUnprivileged(t)
	if u.cred == nil {
		t.Skip("needs root to leave a file of another user beside the ledger")
	}
	u.call(append([]string{"--key", "wal-1"}, pay...)...).wantExit(t, exitOK)
	wal := u.ledgerPath() + "-wal"
	if err := os.WriteFile(wal, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	got := u.call(append([]string{"--key", "wal-2"}, pay...)...)
	got.wantExit(t, exitUnreachable, wal+" has mode 0400", "chmod 0600 "+wal)
	if n := u.paymentsFor("wal-2"); n != 0 {
		t.Errorf("payments for wal-2 = %d; want 0", n)
	}
}

// smallDisk mounts a tmpfs of size as root, else skips saying why.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as a disk")
	}
	fs := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(fs, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", fs).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", fs).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", fs, err, out)
		}
	})
	return fs
}

// The disk under the ledger is full before the call: at the open (no
// process has the ledger open, so SQLite must create -shm) and at the
// claim (another process holds it open, so only the claim's write needs
// room). Both exit 5, pay nothing, and the same call runs once there is
// room.
func TestLedgerFullDiskBeforeTheCallExits5(t *testing.T) {
	for _, held := range []bool{false, true} {
		name := map[bool]string{false: "at open", true: "at claim"}[held]
		t.Run(name, func(t *testing.T) {
			e := newE2E(t)
			fs := smallDisk(t, "1m")
			path := filepath.Join(fs, "ledger.db")
			e.env = append(e.env, "MCPLEDGER_LEDGER="+path)
			e.call(nil, append([]string{"--yes", "--key", "full-1"}, pay...)...).wantExit(t, exitOK)
			if held {
				st, err := sqlite.Open(context.Background(), path, nil)
				if err != nil {
					t.Fatalf("sqlite.Open = %v", err)
				}
				t.Cleanup(func() { st.Close() })
			}
			fill(t, filepath.Join(fs, "fill"))
			got := e.call(nil, append([]string{"--yes", "--key", "full-2"}, pay...)...)
			got.wantExit(t, exitUnreachable, "disk holding the ledger "+path+" is full", "nothing was sent", "free space")
			if n := e.paymentsFor("full-2"); n != 0 {
				t.Errorf("payments for full-2 = %d; want 0", n)
			}
			if err := os.Remove(filepath.Join(fs, "fill")); err != nil {
				t.Fatal(err)
			}
			e.call(nil, append([]string{"--yes", "--key", "full-2"}, pay...)...).wantExit(t, exitOK)
			if n := e.paymentsFor("full-2"); n != 1 {
				t.Errorf("payments for full-2 after freeing space = %d; want 1", n)
			}
		})
	}
}

// A ledger on a file system mounted read-only: exit 5, saying so.
func TestLedgerReadOnlyMountExits5(t *testing.T) {
	e := newE2E(t)
	fs := smallDisk(t, "1m")
	path := filepath.Join(fs, "ledger.db")
	e.env = append(e.env, "MCPLEDGER_LEDGER="+path)
	e.call(nil, append([]string{"--yes", "--key", "rofs-1"}, pay...)...).wantExit(t, exitOK)
	if out, err := exec.Command("mount", "-o", "remount,ro", fs).CombinedOutput(); err != nil {
		t.Skipf("cannot remount the tmpfs read-only (%v: %s)", err, out)
	}
	got := e.call(nil, append([]string{"--yes", "--key", "rofs-2"}, pay...)...)
	got.wantExit(t, exitUnreachable, path, "mounted read-only", "remount it read-write")
	if n := e.paymentsFor("rofs-2"); n != 0 {
		t.Errorf("payments for rofs-2 = %d; want 0", n)
	}
}

// A ledger whose pages past the schema are garbage: it opens, the first
// read of records fails, and the call exits 2 as the README says, naming
// the file and what to do.
func TestLedgerCorruptExits2(t *testing.T) {
	e := newE2E(t)
	e.call(nil, append([]string{"--yes", "--key", "bad-1"}, pay...)...).wantExit(t, exitOK)
	path := e.ledgerPath()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 8 * 4096; i < len(data); i++ {
		data[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got := e.call(nil, append([]string{"--yes", "--key", "bad-2"}, pay...)...)
	got.wantExit(t, exitUsage, path, "restore it from a backup")
	if n := e.paymentsFor("bad-2"); n != 0 {
		t.Errorf("payments for bad-2 = %d; want 0", n)
	}
}

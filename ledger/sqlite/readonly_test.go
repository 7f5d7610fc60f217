package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func TestReadOnlyCreatesNothing(t *testing.T) {
	ctx := context.Background()
	ro := &sqlite.Options{ReadOnly: true}
	t.Run("missing file and folder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		path := filepath.Join(dir, "ledger.db")
		st, err := sqlite.Open(ctx, path, ro)
		if err == nil {
			st.Close()
		}
		if !errors.Is(err, sqlite.ErrNoLedger) {
			t.Errorf("Open(%s, ReadOnly) = %v; want ErrNoLedger", path, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Stat(%s) = %v; want the folder not created", dir, err)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := sqlite.Open(ctx, path, ro)
		if err == nil {
			st.Close()
		}
		if !errors.Is(err, sqlite.ErrNoLedger) {
			t.Errorf("Open(empty file, ReadOnly) = %v; want ErrNoLedger", err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Errorf("the empty file after a read-only Open: %v, %v; want it still empty", fi, err)
		}
		if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Stat(-wal) = %v; want no WAL file", err)
		}
	})
	t.Run("foreign file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		if err := os.WriteFile(path, []byte("my diary\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := sqlite.Open(ctx, path, ro); !errors.Is(err, sqlite.ErrNotDatabase) {
			t.Errorf("Open(text file, ReadOnly) = %v; want ErrNotDatabase", err)
		}
	})
}

func TestReadOnlyReadsAndRefusesWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	rw := openPath(t, path, nil)
	if _, err := rw.Claim(ctx, claimReq("k1", "owner-1")); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open(ReadOnly) = %v", err)
	}
	defer st.Close()
	page, err := st.List(ctx, ledger.Filter{Tenant: "acme", Limit: 10})
	if err != nil || len(page.Records) != 1 || page.Records[0].Key != "k1" {
		t.Fatalf("List on a read-only ledger = %+v, %v; want the record k1", page, err)
	}
	_, err = st.Claim(ctx, claimReq("k2", "owner-2"))
	if !errors.Is(err, sqlite.ErrReadOnly) {
		t.Errorf("Claim on a read-only ledger = %v; want ErrReadOnly", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the ledger file changed under a read-only Store")
	}
}

func TestWarnsOnceAboutAReadableFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st := openPath(t, path, nil)
	st.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for range 2 {
		s, err := sqlite.Open(ctx, path, &sqlite.Options{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if logs.Len() != 0 {
		t.Fatalf("a 0600 ledger warned: %s", logs.String())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := sqlite.Open(ctx, path, &sqlite.Options{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if n := strings.Count(logs.String(), "chmod 600"); n != 1 {
		t.Errorf("a 0644 ledger opened twice warned %d times; want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "0644") {
		t.Errorf("the warning does not give the mode: %s", logs.String())
	}
}

func TestLockHolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("LockHolder needs fcntl locks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st := openPath(t, path, &sqlite.Options{BusyTimeout: 200 * time.Millisecond})
	if _, err := st.Claim(ctx, claimReq("before", "owner-1")); err != nil {
		t.Fatal(err)
	}
	if pid, err := sqlite.LockHolder(path); err != nil || pid != 0 {
		t.Fatalf("LockHolder of an idle ledger = %d, %v; want 0", pid, err)
	}
	c := startChild(t, ctx, "lock", path, "")
	c.expect(t, "locked")
	want := c.cmd.Process.Pid
	if sqlite.Driver != sqlite.DriverCgo {
		// The pure-Go driver takes open file description locks, whose
		// holder the kernel does not name.
		want = -1
	}
	pid, err := sqlite.LockHolder(path)
	if err != nil || pid != want {
		t.Errorf("LockHolder while a child holds the lock = %d, %v; want %d (the child is %d)", pid, err, want, c.cmd.Process.Pid)
	}
	_, err = st.Claim(ctx, claimReq("k1", "owner-1"))
	var be *sqlite.BusyError
	if !errors.As(err, &be) || !errors.Is(err, sqlite.ErrBusy) || be.Timeout != 200*time.Millisecond || be.Path == "" {
		t.Errorf("Claim on a locked ledger = %v; want a *BusyError matching ErrBusy", err)
	}
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if pid, err := sqlite.LockHolder(path); err != nil || pid != 0 {
		t.Errorf("LockHolder after the child let go = %d, %v; want 0", pid, err)
	}
}

package sqlite_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenWithoutCgo builds a program with CGO_ENABLED=0, as go install
// does on a machine without a C compiler: it compiles, and Open fails with
// ErrNoDriver, a one-line message that says how to build with cgo, before
// it creates anything.
func TestOpenWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "nocgo")
	build := exec.Command(goTool, "build", "-o", bin, "./testdata/nocgo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build = %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "state")
	out, err := exec.Command(bin, filepath.Join(dir, "ledger.db")).Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Open in a CGO_ENABLED=0 build: %v, output %q; want exit 3 (ErrNoDriver)", err, out)
	}
	msg := strings.TrimSuffix(string(out), "\n")
	for _, want := range []string{"CGO_ENABLED=0", "CGO_ENABLED=1", "C compiler", "postgres://"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") || len(msg) > 300 {
		t.Errorf("message is %d bytes over %d lines; want one bounded line: %q", len(msg), strings.Count(msg, "\n")+1, msg)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(%s) = %v; want nothing created", dir, err)
	}
}

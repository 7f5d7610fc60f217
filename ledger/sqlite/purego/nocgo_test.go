package purego_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// TestLedgerMovesBetweenDrivers builds a program with CGO_ENABLED=0, as go
// install does on a machine without a C compiler, so it runs on the
// pure-Go driver: a ledger it writes is read by this build's driver
// (mattn/go-sqlite3 when the test runs with cgo), and one this build
// writes is read by it. The file, its schema and its records are the
// same.
func TestLedgerMovesBetweenDrivers(t *testing.T) {
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
	nocgo := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("nocgo %v = %v, output %q", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	path := filepath.Join(t.TempDir(), "state", "ledger.db")

	// Written without cgo, read here.
	if out := nocgo("write", path, "from-nocgo"); !strings.HasPrefix(out, "github.com/ncruces/go-sqlite3 SUCCEEDED") {
		t.Fatalf("nocgo write = %q; want the pure-Go driver and a SUCCEEDED record", out)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the ledger the pure-Go driver created: %v, %v; want mode 0600", fi, err)
	}
	ctx := context.Background()
	st := openPath(t, path, nil)
	rec, err := st.Get(ctx, ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "from-nocgo"})
	if err != nil || rec.State != ledger.StateSucceeded || !strings.Contains(string(rec.Result), "paid from-nocgo") {
		t.Fatalf("reading the pure-Go driver's record with %s = %+v, %v", sqlite.Driver, rec, err)
	}

	// Written here, read without cgo.
	id := ledger.ID{Tenant: "acme", Layer: ledger.LayerClient, Tool: "create_payment", Key: "from-here"}
	lc := &ledger.Lifecycle{Store: st, Owner: "here"}
	cl, err := lc.Claim(ctx, ledger.ClaimRequest{ID: id, Session: "s1", Fingerprint: "fp", Arguments: json.RawMessage(`{"amount":7}`), Owner: "here"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Settle(ctx, ledger.Lease{ID: id, Owner: "here", Fence: cl.Record.Fence}, ledger.StateProcessing,
		ledger.Report{On: ledger.OnSucceeded, Result: json.RawMessage(`{"content":[{"type":"text","text":"paid here"}]}`), Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if out := nocgo("read", path, "from-here"); !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "paid here") {
		t.Errorf("nocgo read of %s's record = %q; want it SUCCEEDED with its result", sqlite.Driver, out)
	}
}

// TestNoDriver: a program built without cgo that did not import this
// package gets an error from Open that names the import, and no file.
func TestNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "nodriver")
	build := exec.Command(goTool, "build", "-o", bin, "./testdata/nodriver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build = %v\n%s", err, out)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	out, err := exec.Command(bin, path).Output()
	if err == nil {
		t.Fatalf("Open without a driver succeeded: %q", out)
	}
	msg := strings.TrimSpace(string(out))
	if !strings.Contains(msg, `import _ "github.com/mcpledger/mcpledger/ledger/sqlite/purego"`) || strings.Contains(msg, "\n") {
		t.Errorf("Open without a driver = %q; want one line naming the import", msg)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Open without a driver left %s: %v", path, err)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// person is an OS account agentctl runs as.
type person struct {
	name string
	cred *syscall.Credential
}

// people creates one OS account per name for the test (removed at its
// end), and an e2e setup in a folder they all may write. It skips when the
// test is not root: only root creates accounts and runs as them.
func people(t *testing.T, names ...string) (*e2e, []person) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("separation of duties needs two OS accounts: run as root so the test can create them (useradd) and run agentctl as each")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skipf("no useradd to create the test's OS accounts: %v", err)
	}
	e := newE2E(t)
	dir, err := os.MkdirTemp("", "agentctl-people")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{dir, binDir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var out []person
	for _, n := range names {
		// Accounts are machine-wide: a name no other run uses.
		name := fmt.Sprintf("mcpl%s%d", n, os.Getpid()%100000)
		if b, err := exec.Command("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			t.Skipf("useradd %s: %v: %s", name, err, b)
		}
		t.Cleanup(func() { exec.Command("userdel", name).Run() })
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		out = append(out, person{name: name, cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}})
	}
	e.dir, e.payDB = dir, filepath.Join(dir, "pay.db")
	e.server = "'" + e.payments + "' -db '" + e.payDB + "'"
	e.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "MCPLEDGER_LEDGER=" + filepath.Join(dir, "ledger.db")}
	return e, out
}

// as runs agentctl as p, with env added (USER set to a lie among them).
func (e *e2e) as(p person, env []string, args ...string) outcome {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, args...)
	cmd.Env = append(append([]string{}, e.env...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	o := runOutcome(e.t, cmd)
	e.share()
	return o
}

// share lets every test account write the ledger and the payments
// database (a shared ledger of several people is a PostgreSQL database in
// production; a SQLite file needs its mode for it).
func (e *e2e) share() {
	for _, f := range []string{filepath.Join(e.dir, "ledger.db"), e.payDB} {
		for _, p := range append([]string{f}, sqlite.Companions(f)...) {
			if err := os.Chmod(p, 0o666); err != nil && !os.IsNotExist(err) {
				e.t.Fatal(err)
			}
		}
	}
}

// Separation of duties holds between OS accounts, whatever USER says:
// alice's call is refused to alice (even as USER=bob), bob's approval (as
// USER=alice) counts, and the record names them both by their accounts.
func TestSeparationOfDutiesByOSAccount(t *testing.T) {
	e, ps := people(t, "a", "b")
	alice, bob := ps[0], ps[1]
	policy := e.queuePolicy(`"distinctApprover": true, `)
	if err := os.Chmod(filepath.Join(e.dir, "policy.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := append([]string{"call", "--server", e.server, "--key", "order-s"}, pay...)

	e.as(alice, []string{policy, "USER=" + bob.name}, call...).wantExit(t, exitAwaiting)
	e.as(alice, []string{policy, "USER=" + bob.name}, "ledger", "approve", "order-s").
		wantExit(t, exitDenied, "may not approve their own call", alice.name)
	if u := os.Getenv("USER"); u != "" {
		t.Logf("the test's own USER is %s; agentctl ignores it", u)
	}
	ok := e.as(bob, []string{policy, "USER=" + alice.name}, "ledger", "approve", "order-s", "--reason", "PO checked")
	ok.wantExit(t, exitOK)
	if !strings.Contains(ok.stdout, "approved by "+bob.name) {
		t.Errorf("approve printed %q; want approved by %s", ok.stdout, bob.name)
	}
	e.as(alice, []string{policy}, call...).wantExit(t, exitOK)
	if n := e.paymentsFor("order-s"); n != 1 {
		t.Fatalf("payments for order-s = %d; want 1", n)
	}
	r := readRecord(t, filepath.Join(e.dir, "ledger.db"), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-s"})
	if ap := r.Approval; ap == nil || ap.By != bob.name || ap.Requester != alice.name || ap.Via != "agentctl" {
		t.Errorf("order-s approval = %+v; want by %s via agentctl, requested by %s", r.Approval, bob.name, alice.name)
	}
}

// Without distinctApprover the terminal prompt and the CLI name the OS
// account, never USER, and a call with USER unset is still someone's.
func TestApproverIsTheOSAccount(t *testing.T) {
	e := newE2E(t)
	me := osAccount()
	if strings.HasPrefix(me, "uid:") {
		t.Logf("this uid has no account name: identities read %s", me)
	}
	policy := filepath.Join(e.dir, "ask.json")
	if err := os.WriteFile(policy, []byte(`{"rules": [{"tool": "create_payment", "action": "ask"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.runEnv(answer("1\n"), []string{"MCPLEDGER_POLICY=" + policy, "USER=mallory", "LOGNAME=mallory"},
		append([]string{"call", "--server", e.server, "--key", "t-1"}, pay...)...).wantExit(t, exitOK)
	r := readRecord(t, filepath.Join(e.dir, "ledger.db"), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "t-1"})
	if ap := r.Approval; ap == nil || ap.By != me || ap.Via != "terminal" {
		t.Errorf("t-1 approval = %+v; want by %s at the terminal (not mallory)", r.Approval, me)
	}
}

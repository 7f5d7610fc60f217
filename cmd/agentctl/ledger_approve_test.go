package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// queuePolicy writes a policy file that queues create_payment.
func (e *e2e) queuePolicy(extra string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, "policy.json")
	doc := `{` + extra + `"rules": [{"tool": "create_payment", "action": "queue", "note": "money leaves the account"}]}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return "MCPLEDGER_POLICY=" + p
}

func TestQueuedCallApprovedFromAnotherProcess(t *testing.T) {
	e := newE2E(t)
	policy := e.queuePolicy("")
	alice, bob := []string{policy, "USER=alice"}, []string{policy, "USER=bob"}
	// No one approves before it returns: a call that waited for an
	// approval would end in run's guard and fail there.
	o := e.runEnv(nil, alice, append([]string{"call", "--server", e.server, "--key", "order-q"}, pay...)...)
	o.wantExit(t, exitAwaiting, "awaits a person's approval", "agentctl ledger approve order-q", "nothing ran")
	show := e.run(nil, "--json", "ledger", "show", "order-q")
	show.wantExit(t, exitOK)
	if recs := jsonLines[ledger.Record](t, show.stdout); len(recs) != 1 || recs[0].State != ledger.StatePendingApproval || recs[0].Attempts != 0 {
		t.Errorf("ledger show order-q = %+v; want PENDING_APPROVAL, no attempt", recs)
	}
	if n := e.paymentsFor("order-q"); n != 0 {
		t.Fatalf("payments for order-q = %d before approval; want 0", n)
	}
	// Still waiting: the same command says so again.
	e.runEnv(nil, alice, append([]string{"call", "--server", e.server, "--key", "order-q"}, pay...)...).wantExit(t, exitAwaiting)

	a := e.runEnv(nil, bob, "ledger", "approve", "order-q", "--reason", "invoice 7 checked")
	a.wantExit(t, exitOK)
	if !strings.Contains(a.stdout, "approved by "+osAccount()+" until") {
		t.Errorf("approve printed %q; want who approved", a.stdout)
	}
	// Four agents run the approved call at once: one payment.
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Go(func() {
			codes[i] = e.runEnv(nil, alice, append([]string{"call", "--server", e.server, "--key", "order-q"}, pay...)...).code
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != exitOK {
			t.Errorf("caller %d exited %d; want 0", i, c)
		}
	}
	if n := e.paymentsFor("order-q"); n != 1 {
		t.Fatalf("payments for order-q = %d; want exactly 1", n)
	}
	// The record is there, and no longer waits: approve and deny say so.
	e.runEnv(nil, bob, "ledger", "approve", "order-q").wantExit(t, exitUsage, "key order-q awaits no approval", "is SUCCEEDED", "approved by "+osAccount())
	e.runEnv(nil, bob, "ledger", "deny", "order-q", "--reason", "late").wantExit(t, exitUsage, "key order-q awaits no approval", "is SUCCEEDED")
}

func TestQueuedCallDenied(t *testing.T) {
	e := newE2E(t)
	policy := e.queuePolicy("")
	e.runEnv(nil, []string{policy}, append([]string{"call", "--server", e.server, "--key", "order-d"}, pay...)...).wantExit(t, exitAwaiting)
	e.runEnv(nil, []string{policy}, "ledger", "deny", "order-d").wantExit(t, exitUsage, "--reason")
	e.runEnv(nil, []string{policy, "USER=bob"}, "ledger", "deny", "order-d", "--reason", "duplicate invoice").wantExit(t, exitOK)
	e.runEnv(nil, []string{policy}, append([]string{"call", "--server", e.server, "--key", "order-d"}, pay...)...).
		wantExit(t, exitDenied, "denied by "+osAccount(), "duplicate invoice")
	if n := e.paymentsFor("order-d"); n != 0 {
		t.Fatalf("payments for order-d = %d; want 0", n)
	}
}

func TestQueuedCallWait(t *testing.T) {
	e := newE2E(t)
	policy := e.queuePolicy("")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.agentctl, append([]string{"call", "--server", e.server, "--key", "order-w", "--wait-approval", "60s"}, pay...)...)
	cmd.Env = append(append([]string{}, e.env...), policy, "USER=alice")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The call waits in the ledger; a person approves once it is there.
	st, err := sqlite.Open(ctx, filepath.Join(e.dir, "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-w"}
	for {
		if _, err := st.Get(ctx, id); err == nil {
			break
		} else if !errors.Is(err, ledger.ErrNotFound) {
			t.Fatal(err)
		}
		if _, err := st.Wait(contextWithTimeout(ctx, 100*time.Millisecond), id); err != nil && ctx.Err() != nil {
			t.Fatalf("the queued call never appeared: %s", errb.String())
		}
	}
	e.runEnv(nil, []string{policy, "USER=bob"}, "ledger", "approve", "order-w").wantExit(t, exitOK)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("call --wait = %v; stderr: %s", err, errb.String())
	}
	if n := e.paymentsFor("order-w"); n != 1 {
		t.Fatalf("payments for order-w = %d; want 1", n)
	}
}

func contextWithTimeout(ctx context.Context, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx, d)
	context.AfterFunc(c, cancel)
	return c
}

// A call queued under a policy that requires another approver, approved
// by its requester under another policy file: the record says what the
// call's policy requires, so approve refuses as that policy would, and
// records nothing (before, it said "the next call with this key runs it",
// and that call exited 6).
func TestApproveUnderAnotherPolicyTellsTheTruth(t *testing.T) {
	e := newE2E(t)
	strict := e.queuePolicy(`"distinctApprover": true, `)
	other := filepath.Join(e.dir, "other-policy.json")
	if err := os.WriteFile(other, []byte(`{"rules": [{"tool": "create_payment", "action": "queue"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	call := append([]string{"call", "--server", e.server, "--key", "order-p"}, pay...)
	e.runEnv(nil, []string{strict}, call...).wantExit(t, exitAwaiting)

	got := e.runEnv(nil, []string{strict}, "ledger", "approve", "order-p", "--policy", other)
	got.wantExit(t, exitDenied, "may not approve their own call", "requires another person to approve create_payment order-p")
	if strings.Contains(got.stdout, "runs it") {
		t.Errorf("approve printed %q; the next call would not run it", got.stdout)
	}
	r := readRecord(t, filepath.Join(e.dir, "ledger.db"), ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "order-p"})
	if r.State != ledger.StatePendingApproval || r.Approval != nil {
		t.Fatalf("order-p after the refused approval = %s, approval %+v; want PENDING_APPROVAL, none", r.State, r.Approval)
	}
	// Under the call's own policy the refusal names the rule.
	e.runEnv(nil, []string{strict}, "ledger", "approve", "order-p").wantExit(t, exitDenied, "may not approve their own call")
	e.runEnv(nil, []string{strict}, call...).wantExit(t, exitAwaiting)
	if n := e.paymentsFor("order-p"); n != 0 {
		t.Fatalf("payments for order-p = %d; want 0", n)
	}
}

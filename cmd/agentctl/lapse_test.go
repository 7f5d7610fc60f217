package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// A queued call whose approval expired reads REJECTED at once, in list,
// show and the state filter, and approve names that state; nothing in the
// ledger was written to make it so (ledger list is read-only).
func TestExpiredApprovalReadsRejected(t *testing.T) {
	path, env := ledgerEnv(t)
	// Queued an hour ago under a lease long gone.
	seedLedger(t, path, time.Now().Add(-time.Hour),
		seedRecord{tool: "create_payment", key: "q-old", state: ledger.StatePendingApproval},
		seedRecord{tool: "create_payment", key: "q-done", state: ledger.StateSucceeded, result: `{"content":[]}`},
		seedRecord{tool: "create_payment", key: "q-no", state: ledger.StateDenied})
	seedLedger(t, path, time.Now(), seedRecord{tool: "create_payment", key: "q-new", state: ledger.StatePendingApproval})

	list := inProcess(t, env, nil, "--json", "ledger", "list")
	list.wantExit(t, exitOK)
	states := map[string]ledger.State{}
	for _, r := range jsonLines[ledger.Record](t, list.stdout) {
		states[r.Key] = r.State
	}
	if states["q-old"] != ledger.StateRejected || states["q-new"] != ledger.StatePendingApproval {
		t.Errorf("ledger list states = %v; want q-old REJECTED, q-new PENDING_APPROVAL", states)
	}
	keys := func(state string) []string {
		o := inProcess(t, env, nil, "--json", "ledger", "list", "--state", state)
		o.wantExit(t, exitOK)
		var ks []string
		for _, r := range jsonLines[ledger.Record](t, o.stdout) {
			ks = append(ks, r.Key)
		}
		return ks
	}
	if got := keys("pending_approval"); len(got) != 1 || got[0] != "q-new" {
		t.Errorf("list --state pending_approval = %v; want [q-new]", got)
	}
	if got := keys("rejected"); len(got) != 1 || got[0] != "q-old" {
		t.Errorf("list --state rejected = %v; want [q-old]", got)
	}
	show := inProcess(t, env, nil, "--json", "ledger", "show", "q-old")
	show.wantExit(t, exitOK)
	if r := jsonLines[ledger.Record](t, show.stdout); len(r) != 1 || r[0].State != ledger.StateRejected || r[0].ErrorKind != ledger.KindApprovalExpired {
		t.Errorf("ledger show q-old = %+v; want REJECTED, %s", r, ledger.KindApprovalExpired)
	}
	inProcess(t, env, nil, "ledger", "approve", "q-old").wantExit(t, exitUsage, "key q-old awaits no approval", "is REJECTED", "its approval expired at")
	inProcess(t, env, nil, "ledger", "deny", "q-done", "--reason", "x").wantExit(t, exitUsage, "key q-done awaits no approval", "is SUCCEEDED")
	inProcess(t, env, nil, "ledger", "approve", "q-no").wantExit(t, exitUsage, "key q-no awaits no approval", "is DENIED", "denied by seed")
	if got := readRecord(t, path, ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: "q-old"}); got.State != ledger.StatePendingApproval {
		t.Errorf("stored q-old = %s; reading must write nothing", got.State)
	}
	if text := inProcess(t, env, nil, "ledger", "show", "q-old").stdout; !strings.Contains(text, "REJECTED") {
		t.Errorf("ledger show q-old = %q; want REJECTED", text)
	}
}

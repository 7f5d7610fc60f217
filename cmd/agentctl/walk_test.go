package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// TestStateWalkCLI: agentctl call with the key of a record in each of the
// eight states, against the payments example, exits with the code of the
// state's row (ledger.RowOf) and runs the tool only when the row says to
// claim the call again; ledger show reports the state the record holds, in
// text and in --json alike. The payments example is key-aware, so an
// UNKNOWN record is sent again under its key and the server's own record
// decides: it has none (the seeded call never reached it), so it runs
// once.
func TestStateWalkCLI(t *testing.T) {
	for _, s := range ledger.States {
		row := ledger.RowOf(s)
		t.Run(string(s), func(t *testing.T) {
			e := newE2E(t)
			key := "walk-" + strings.ToLower(string(s))
			id := ledger.ID{Layer: ledger.LayerClient, Tenant: "default", Tool: "create_payment", Key: key}
			seedOne(t, e.ledgerPath(), id, s)

			o := e.call(nil, append([]string{"--yes", "--key", key, "--timeout", "2s"}, pay...)...)
			wantExit, wantPaid, wantRecord := row.Exit, 0, s
			switch row.Act {
			case ledger.ActReclaim:
				wantExit, wantPaid, wantRecord = exitOK, 1, ledger.StateSucceeded
			case ledger.ActReconcile:
				wantExit, wantPaid, wantRecord = exitOK, 1, ledger.StateSucceeded
			case ledger.ActReplay, ledger.ActWait, ledger.ActDenied:
			default:
				t.Fatalf("the row of %s names action %q, which this walk does not know", s, row.Act)
			}
			if testing.Verbose() {
				t.Logf("%s: exit %d\nstderr: %s", s, o.code, o.stderr)
			}
			if o.code != wantExit {
				t.Errorf("agentctl call on a %s record exited %d; want %d (its row)\nstdout: %s\nstderr: %s", s, o.code, wantExit, o.stdout, o.stderr)
			}
			if n := e.paymentsFor(key); n != wantPaid {
				t.Errorf("payments for %s = %d; want %d", key, n, wantPaid)
			}
			if got := e.record(key).State; got != wantRecord {
				t.Errorf("the record of %s is %s after the call; want %s", key, got, wantRecord)
			}

			js := e.run(nil, "--json", "ledger", "show", key)
			js.wantExit(t, exitOK)
			recs := jsonLines[ledger.Record](t, js.stdout)
			if len(recs) != 1 || recs[0].State != wantRecord {
				t.Errorf("ledger show --json %s = %+v; want one %s record", key, recs, wantRecord)
			}
			text := e.run(nil, "ledger", "show", key)
			text.wantExit(t, exitOK)
			if !strings.Contains(text.stdout, string(wantRecord)) {
				t.Errorf("ledger show %s does not say %s:\n%s", key, wantRecord, text.stdout)
			}
			// The person reads what the state means in the words the model
			// reads in ledger_status (ledger.Meaning), whatever the width.
			if m := ledger.Meaning(e.record(key)); !strings.Contains(strings.Join(strings.Fields(text.stdout), " "), m) {
				t.Errorf("ledger show %s does not say what %s means (%q):\n%s", key, wantRecord, m, text.stdout)
			}
		})
	}
}

// seedOne records the call id in state s as another process would have
// left it: a live lease held by no process for PROCESSING, a queued call
// for PENDING_APPROVAL, the payments call's own arguments.
func seedOne(t *testing.T, path string, id ledger.ID, s ledger.State) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("sqlite.Open(%q) = %v", path, err)
	}
	defer st.Close()
	doc, err := json.Marshal(payArgs)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := args.Fingerprint(doc)
	if err != nil {
		t.Fatal(err)
	}
	owner := "elsewhere"
	if s == ledger.StatePendingApproval {
		owner = ledger.QueueOwner(false, "", "someone")
	}
	c, err := st.Claim(ctx, ledger.ClaimRequest{
		ID: id, Session: "walk", Fingerprint: fp, Arguments: doc, Owner: owner, Lease: time.Hour,
		NeedsApproval: s == ledger.StateDenied || s == ledger.StatePendingApproval,
	})
	if err != nil || !c.Won {
		t.Fatalf("Claim(%v) = %+v, %v; want a won claim", id, c, err)
	}
	tr := ledger.Transition{ID: id, From: c.Record.State, To: s, Owner: owner, Fence: c.Record.Fence, AddAttempts: 1}
	switch s {
	case ledger.StateProcessing, ledger.StatePendingApproval:
		return
	case ledger.StateSucceeded, ledger.StateFailed:
		tr.Result = json.RawMessage(`{"content":[{"type":"text","text":"payment pay_walk"}],"isError":` + map[bool]string{true: "true", false: "false"}[s == ledger.StateFailed] + `}`)
	case ledger.StateDenied:
		tr.AddAttempts = 0
		tr.Approval = &ledger.Approval{Decision: ledger.DecisionDenied, By: "ann", At: time.Now().UTC(), Reason: "not today"}
	case ledger.StateRejected:
		tr.ErrorKind, tr.ErrorMessage = ledger.KindRefused, "amount_cents: want a number"
	default:
		tr.ErrorKind, tr.ErrorMessage = "seeded", "as another process left it"
	}
	if _, err := st.Transition(ctx, tr); err != nil {
		t.Fatalf("Transition(%v -> %s) = %v", id, s, err)
	}
}

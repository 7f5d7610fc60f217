package ledger_test

import (
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

// RedactRecord redacts an approval's reason, on a copy of the approval:
// the record it was read from (which may share the approval) keeps the
// reason as stored.
func TestRedactRecordRedactsTheApprovalReason(t *testing.T) {
	const reason = "ok: password=hunter2 checked with the vendor"
	stored := &ledger.Record{Approval: &ledger.Approval{Decision: ledger.DecisionApproved, By: "ops", Reason: reason}}
	shown := *stored
	ledger.RedactRecord(&shown)
	if strings.Contains(shown.Approval.Reason, "hunter2") || !strings.Contains(shown.Approval.Reason, "checked with the vendor") {
		t.Errorf("shown reason = %q; want the password redacted and the rest kept", shown.Approval.Reason)
	}
	if stored.Approval.Reason != reason {
		t.Errorf("the stored record's reason became %q; want it unchanged", stored.Approval.Reason)
	}
}

package terminal

import (
	"encoding/json"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

func ptr(b bool) *bool { return &b }

func sampleRequest() confirm.Request {
	return confirm.Request{
		Tenant:    "acme",
		Session:   "s-1",
		Server:    "payments",
		Tool:      "create_payment",
		Key:       "order-42",
		Arguments: json.RawMessage(`{"amount":1250,"currency":"EUR","card_token":"[REDACTED]"}`),
		Hints:     &confirm.Hints{Destructive: ptr(false), OpenWorld: ptr(true)},
		Earlier: []*ledger.Record{{
			ID:        ledger.ID{Tenant: "acme", Tool: "create_payment", Key: "order-41"},
			State:     ledger.StateSucceeded,
			Attempts:  2,
			CreatedAt: time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC),
			Approval:  &ledger.Approval{Decision: ledger.DecisionApproved, By: "terminal:alice"},
		}},
		Why: `default policy: tool "*pay*" -> ask`,
	}
}

package terminal_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/confirm/terminal"
	"github.com/mcpledger/mcpledger/ledger"
)

func ExamplePrompt() {
	// Accessible mode answers over any reader: "3" denies, then the reason.
	var screen strings.Builder
	p := &terminal.Prompt{In: strings.NewReader("3\nwrong amount\n"), Out: &screen, Accessible: true, User: "alice"}
	answer, err := p.Confirm(context.Background(), confirm.Request{
		Server: "payments", Tool: "create_payment", Key: "order-42",
		Arguments: []byte(`{"amount":1250}`),
	})
	fmt.Println(answer.Decision, answer.By, answer.Via, answer.Reason, err)
	// Output:
	// denied alice terminal wrong amount <nil>
}

func ExamplePrompt_chain() {
	// The prompt is the usual last resort after the host's elicitation;
	// a nil Prompt (no terminal wanted) passes the question on.
	var nobody *terminal.Prompt
	yes := confirm.Static{Answer: confirm.Answer{Decision: ledger.DecisionApproved, Reason: "--yes"}}
	answer, err := confirm.Chain(nobody, yes).Confirm(context.Background(), confirm.Request{Tool: "create_payment"})
	fmt.Println(answer.Decision, answer.By, err)
	// Output:
	// approved static <nil>
}

package confirm_test

import (
	"context"
	"fmt"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

func ExamplePolicy_Decide() {
	policy := confirm.Default()
	yes := true
	for _, tool := range []confirm.Tool{
		{Name: "create_payment", Server: "payments"},
		{Name: "get_payment", Server: "payments"},
		{Name: "reset_cache", Server: "cache", Hints: &confirm.Hints{Destructive: &yes}},
		// An untrusted server calling a delete read-only is not believed.
		{Name: "delete_account", Server: "accounts", Hints: &confirm.Hints{ReadOnly: &yes}},
		{Name: "weather", Server: "forecast"},
	} {
		fmt.Printf("%-15s %s\n", tool.Name, policy.Decide(tool))
	}
	// Output:
	// create_payment  ask
	// get_payment     allow
	// reset_cache     ask
	// delete_account  ask
	// weather         allow
}

func ExampleParse() {
	policy, err := confirm.Parse([]byte(`{
  "trusted": ["payments"],
  "rules": [
    {"tool": "create_payment", "server": "sandbox", "action": "allow"},
    {"tool": "*", "server": "prod", "when": {"destructive": true}, "action": "deny"}
  ]
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(policy.Decide(confirm.Tool{Name: "create_payment", Server: "sandbox"}))
	fmt.Println(policy.Decide(confirm.Tool{Name: "create_payment", Server: "live"}))

	_, err = confirm.Parse([]byte(`{"rules": [{"tool": "*", "action": "alow"}]}`))
	fmt.Println(err)
	// Output:
	// allow
	// ask
	// confirm: policy:1:36: rules[0].action: "alow" is not allow, ask, queue or deny
}

func ExampleChain() {
	// No terminal and no elicitation-capable host: the chain says so and
	// the caller denies. With --yes, a Static answer sits at the end.
	nobody := confirm.Chain() // an empty chain: no one to ask
	yes := confirm.Static{Answer: confirm.Answer{Decision: ledger.DecisionApproved, Reason: "--yes"}}

	_, err := confirm.Chain(nobody).Confirm(context.Background(), confirm.Request{Tool: "create_payment"})
	fmt.Println(err)
	answer, _ := confirm.Chain(nobody, yes).Confirm(context.Background(), confirm.Request{Tool: "create_payment"})
	fmt.Println(answer.Decision, answer.By)
	// Output:
	// confirm: no terminal and no elicitation-capable host to ask; give the caller a Confirmer (Options.Confirmer: confirm.Static approves), or allow the tool in its Policy (Options.Policy)
	// approved static
}

// A policy's reconcile section names the probe of a tool: the arguments
// it is called with for an UNKNOWN call, and what its answer means.
func ExamplePolicy_ProbeFor() {
	policy, err := confirm.Parse([]byte(`{"version": 1,
	  "reconcile": [{"tool": "create_payment", "probe": "find_payment",
	    "arguments": {"idempotency_key": "{{.Key}}", "payee": "{{.Arguments.payee}}"},
	    "absent": "not_run", "quiet": "30s"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	pr := policy.ProbeFor("create_payment")
	args, err := pr.Arguments("order-1042", []byte(`{"amount_cents": 1250, "payee": "acme"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	found, _ := pr.Judge([]byte(`{"content": [], "isError": true}`), true)
	fmt.Println(pr.Probe, string(args), pr.QuietPeriod())
	fmt.Println("found:", found)
	// Output:
	// find_payment {"idempotency_key":"order-1042","payee":"acme"} 30s
	// found: false
}

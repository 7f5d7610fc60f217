// Package confirm decides which tool calls need a person and asks them.
//
// A [Policy] maps each tool to allow, ask or deny, from globs on the tool and
// server names and conditions on the tool's annotations; annotations count
// toward allowing only for servers the policy trusts. [Default] is the policy
// without a file: ask for destructive tools and for names that suggest
// deleting, paying or sending; [Load] reads a JSON policy file and rejects
// anything malformed with its line and column.
//
// A [Confirmer] asks: [Static] (tests and --yes) here; elicit.Confirmer (the
// MCP host, through go-sdk's elicitation) in package confirm/elicit; and
// terminal.Prompt (a huh form, or plain prompts in accessible mode) in
// package confirm/terminal. Both are kept apart so that importing confirm
// brings neither an MCP SDK nor a terminal UI library. [Chain] takes the
// first that can ask; when none can, the caller denies with
// [ErrNoConfirmer], whose message names the Confirmer and Policy options.
//
//	policy, err := confirm.Load("policy.json")
//	if err != nil {
//		return err // names the file, line, column and field
//	}
//	tool := confirm.Tool{Name: "create_payment", Server: "payments"}
//	if policy.Decide(tool) == confirm.Ask {
//		c := confirm.Chain(elicit.For(callReq), &terminal.Prompt{})
//		answer, err := c.Confirm(ctx, confirm.Request{Tool: tool.Name, Server: tool.Server, Key: key})
//		if errors.Is(err, confirm.ErrNoConfirmer) {
//			// deny: nobody to ask
//		}
//		rec.Approval = answer.Approval(time.Now())
//	}
//
// The package only decides and asks. Recording the decision in the ledger,
// asking once per operation (a replay never asks), and remembering "approve
// for this session" across processes are the client's work.
package confirm

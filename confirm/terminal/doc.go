// Package terminal asks a person at a terminal to confirm a tool call: a
// huh form (approve once, approve for this session, deny with a reason), or
// numbered plain prompts in accessible mode.
//
// It is apart from package confirm so that a program importing confirm,
// client or server gets no terminal UI library; cmd/agentctl and programs
// that want the prompt import it.
//
//	c := confirm.Chain(elicit.For(callReq), &terminal.Prompt{})
//	answer, err := c.Confirm(ctx, confirm.Request{Tool: "create_payment", Key: key})
package terminal

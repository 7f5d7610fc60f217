// Package terminal asks a person at a terminal to confirm a tool call: a
// huh form (approve once, approve for this session, deny with a reason), or
// numbered plain prompts in accessible mode.
//
// Importing it asks the terminal nothing: the full-screen form may query the
// terminal (its colours, its keyboard modes) only while it is on screen, so a
// program that shows no prompt never waits on a terminal that does not answer.
//
// It is apart from package confirm so that a program importing confirm,
// client or server gets no terminal UI library; cmd/agentctl and programs
// that want the prompt import it.
//
//	c := confirm.Chain(elicit.For(callReq), &terminal.Prompt{})
//	answer, err := c.Confirm(ctx, confirm.Request{Tool: "create_payment", Key: key})
package terminal

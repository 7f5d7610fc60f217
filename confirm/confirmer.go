package confirm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Request is what a person sees before a sensitive call.
type Request struct {
	Tenant, Session, Server, Tool, Key string
	// Arguments are the call's arguments, already redacted (redact.JSON).
	Arguments json.RawMessage
	// Hints are the tool's annotations; nil when the server sent none.
	Hints *Hints
	// Earlier are earlier attempts of this operation or similar calls, so
	// the person can tell a re-plan from a new intent.
	Earlier []*ledger.Record
	// Why is the policy's reason for asking (Policy.Explain); may be empty.
	Why string
}

// Answer is a confirmer's decision.
type Answer struct {
	// Decision is ledger.DecisionApproved, ledger.DecisionApprovedSession
	// or ledger.DecisionDenied.
	Decision string
	// By says who answered: the OS account at the terminal (by uid),
	// "elicitation:HOST", "static", "policy".
	By string
	// Via says where the answer was given ("terminal", "elicitation"; empty
	// when By says it all).
	Via    string
	Reason string
}

// Approved reports whether the call may run.
func (a Answer) Approved() bool {
	return a.Decision == ledger.DecisionApproved || a.Decision == ledger.DecisionApprovedSession
}

// Approval is the ledger's record of the answer, taken at now.
func (a Answer) Approval(now time.Time) *ledger.Approval {
	return &ledger.Approval{Decision: a.Decision, By: a.By, Via: a.Via, At: now.UTC(), Reason: a.Reason}
}

func validDecision(d string) bool {
	return d == ledger.DecisionApproved || d == ledger.DecisionApprovedSession || d == ledger.DecisionDenied
}

// Confirmer asks someone whether a call may run.
//
// A Confirmer that cannot ask here (no terminal, a host without
// elicitation) returns an error wrapping ErrNoConfirmer, so Chain can try the
// next one. Any other error means nobody answered; callers treat it as a
// refusal for this attempt, without recording a decision.
type Confirmer interface {
	Confirm(ctx context.Context, req Request) (Answer, error)
}

// ErrNoConfirmer: there is no one to ask. The caller must fail closed (deny);
// the message tells the person how to let the call through.
//
// The message speaks of the library's options; a program wraps it with
// its own way out (agentctl names --yes and --policy).
var ErrNoConfirmer = errors.New("confirm: no terminal and no elicitation-capable host to ask; " +
	"give the caller a Confirmer (Options.Confirmer: confirm.Static approves), or allow the tool in its Policy (Options.Policy)")

// ErrInputRequired: the confirmer must hand its question to the host and
// the host call again with the answer (an MCP host on protocol 2026-07-28
// or later, package confirm/elicit); the operation keeps its claim
// meanwhile. The confirmer's error matches it with errors.Is.
var ErrInputRequired = errors.New("confirm: the host must answer an elicitation first")

// ErrNoAnswer: a confirmer could ask but got no answer (its input ended).
var ErrNoAnswer = errors.New("confirm: no answer: the input ended before a choice")

// ErrAborted: the person aborted the prompt (Ctrl-C). It is no answer, not
// a denial, and it wraps context.Canceled: the call was interrupted.
var ErrAborted = fmt.Errorf("confirm: the prompt was aborted: %w", context.Canceled)

// Static always gives the same answer: for tests and for --yes.
type Static struct{ Answer Answer }

// Confirm returns s.Answer; By defaults to "static". An answer without a
// valid decision is an error, so a half-filled Static never approves.
func (s Static) Confirm(ctx context.Context, req Request) (Answer, error) {
	a := s.Answer
	if !validDecision(a.Decision) {
		return Answer{}, fmt.Errorf("confirm: static answer has decision %q, want %q, %q or %q",
			a.Decision, ledger.DecisionApproved, ledger.DecisionApprovedSession, ledger.DecisionDenied)
	}
	if a.By == "" {
		a.By = "static"
	}
	return a, nil
}

// Chain asks the first confirmer that is available: each one returning
// ErrNoConfirmer passes the question on. Nil entries are skipped. When none
// is available the chain returns ErrNoConfirmer, and the caller denies.
//
//	c := confirm.Chain(elicit.For(req), &terminal.Prompt{}) // packages confirm/elicit, confirm/terminal
func Chain(cs ...Confirmer) Confirmer {
	return chain(cs)
}

type chain []Confirmer

func (c chain) Confirm(ctx context.Context, req Request) (Answer, error) {
	for _, x := range c {
		if x == nil {
			continue
		}
		a, err := x.Confirm(ctx, req)
		if errors.Is(err, ErrNoConfirmer) {
			continue
		}
		return a, err
	}
	return Answer{}, ErrNoConfirmer
}

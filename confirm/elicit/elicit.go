// Package elicit asks the person behind an MCP host whether a call may
// run, through go-sdk's elicitation (elicitation/create, or the input
// requests of protocol 2026-07-28). It is the go-sdk half of confirmation:
// package confirm decides and asks without speaking any MCP SDK.
//
//	c := confirm.Chain(elicit.For(req), &terminal.Prompt{})
package elicit

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

// Confirmer asks the person behind the MCP host, through elicitation/create on
// the proxy's session with that host. It asks only when the host advertised
// the elicitation capability (form mode); otherwise Confirm returns
// confirm.ErrNoConfirmer and a Chain moves on.
//
// How the question travels depends on the protocol version of the host's
// session:
//
//   - before 2026-07-28, Confirm sends elicitation/create itself
//     ((*mcp.ServerSession).Elicit) and waits for the answer;
//   - from 2026-07-28 a server may not send requests of its own while it
//     serves a call (SEP-2322), so Confirm returns an *InputRequiredError.
//     The tools/call handler returns its Requests as the result's
//     InputRequests; the host asks the person and calls the tool again with
//     inputResponses, and the handler, building the Confirmer with For (which
//     copies Responses), gets the answer from Confirm on that second round.
//
// Answers: accept with approve_once or approve_session approves; accept with
// deny, decline and cancel deny. An answer is taken only under the input id
// Confirm issued for this very operation (tenant, tool, key), so a host
// cannot pre-answer a question it was never asked.
type Confirmer struct {
	Session *mcp.ServerSession
	// Capabilities and ProtocolVersion describe the host for this request;
	// when nil or empty, the session's initialize parameters are used.
	Capabilities    *mcp.ClientCapabilities
	ProtocolVersion string
	// Responses are the inputResponses of the tools/call being confirmed:
	// non-nil on the round after an *InputRequiredError.
	Responses mcp.InputResponseMap
}

// For builds the Confirmer for one tools/call request: its
// session, the host's capabilities and protocol version as this request
// states them, and its inputResponses.
func For(req *mcp.CallToolRequest) *Confirmer {
	if req == nil {
		return nil
	}
	e := &Confirmer{
		Session:         req.Session,
		Capabilities:    req.ClientCapabilities(),
		ProtocolVersion: req.ProtocolVersion(),
	}
	if req.Params != nil {
		e.Responses = req.Params.InputResponses
	}
	return e
}

// InputRequiredError carries the question for a host on protocol 2026-07-28
// or later. The tools/call handler returns
//
//	&mcp.CallToolResult{InputRequests: e.Requests}
//
// and keeps the operation's claim: the host calls again with the answer.
type InputRequiredError struct {
	Requests mcp.InputRequestMap
}

func (e *InputRequiredError) Error() string { return confirm.ErrInputRequired.Error() }

// Is makes errors.Is(err, confirm.ErrInputRequired) true.
func (e *InputRequiredError) Is(target error) bool { return target == confirm.ErrInputRequired }

// multiRoundTripVersion is the first protocol version that forbids
// server-initiated elicitation during a call. Versions are dates, so they
// compare as strings (the SDK does the same).
const multiRoundTripVersion = "2026-07-28"

// The choices, as the elicitation enum (package confirm/terminal uses the
// same values for its form).
const (
	choiceOnce    = "approve_once"
	choiceSession = "approve_session"
	choiceDeny    = "deny"
)

// Confirm asks the host, or reads the answer it already gave.
func (e *Confirmer) Confirm(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
	if e == nil || e.Session == nil {
		return confirm.Answer{}, confirm.ErrNoConfirmer
	}
	id := inputID(req)
	if resp, ok := e.Responses[id]; ok {
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return confirm.Answer{}, fmt.Errorf("confirm: input response %q is a %T, not an elicitation result", id, resp)
		}
		return e.answer(res), nil
	}
	caps, version := e.host()
	if caps == nil || caps.Elicitation == nil {
		return confirm.Answer{}, fmt.Errorf("confirm: the host does not support elicitation: %w", confirm.ErrNoConfirmer)
	}
	// Both modes unset means form, for old clients; URL alone means the
	// host cannot show a form.
	if caps.Elicitation.Form == nil && caps.Elicitation.URL != nil {
		return confirm.Answer{}, fmt.Errorf("confirm: the host supports only URL elicitation: %w", confirm.ErrNoConfirmer)
	}
	params := Params(req)
	if version >= multiRoundTripVersion {
		return confirm.Answer{}, &InputRequiredError{Requests: mcp.InputRequestMap{id: params}}
	}
	res, err := e.Session.Elicit(ctx, params)
	if err != nil {
		return confirm.Answer{}, fmt.Errorf("confirm: elicitation: %w", err)
	}
	return e.answer(res), nil
}

func (e *Confirmer) host() (*mcp.ClientCapabilities, string) {
	caps, version := e.Capabilities, e.ProtocolVersion
	if caps != nil && version != "" {
		return caps, version
	}
	if ip := e.Session.InitializeParams(); ip != nil {
		if caps == nil {
			caps = ip.Capabilities
		}
		if version == "" {
			version = ip.ProtocolVersion
		}
	}
	return caps, version
}

func (e *Confirmer) answer(res *mcp.ElicitResult) confirm.Answer {
	by := "elicitation"
	if ip := e.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
		by += ":" + printable(ip.ClientInfo.Name)
	}
	return Answer(res, by)
}

// Answer maps a host's elicitation result to an Answer. Anything
// but an explicit approval is a denial, including an unknown choice.
func Answer(res *mcp.ElicitResult, by string) confirm.Answer {
	deny := func(reason string) confirm.Answer {
		return confirm.Answer{Decision: ledger.DecisionDenied, By: by, Reason: reason}
	}
	if res == nil {
		return deny("the host returned no answer")
	}
	reason, _ := res.Content["reason"].(string)
	reason = strings.TrimSpace(reason)
	switch res.Action {
	case "accept":
	case "decline":
		return deny(orElse(reason, "declined in the host"))
	case "cancel":
		return deny(orElse(reason, "dismissed in the host without a choice"))
	default:
		return deny(fmt.Sprintf("the host answered with unknown action %q", res.Action))
	}
	choice, _ := res.Content["decision"].(string)
	switch choice {
	case choiceOnce:
		return confirm.Answer{Decision: ledger.DecisionApproved, By: by, Reason: reason}
	case choiceSession:
		return confirm.Answer{Decision: ledger.DecisionApprovedSession, By: by, Reason: reason}
	case choiceDeny, "": // no choice is the schema's default, deny
		return deny(orElse(reason, "denied in the host"))
	default:
		return deny(fmt.Sprintf("the host answered with unknown decision %q", choice))
	}
}

// printable is name as a person may read it in a record: quoted when it
// holds characters that do not print.
func printable(name string) string {
	if strings.IndexFunc(name, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r) }) < 0 {
		return name
	}
	return strconv.QuoteToGraphic(name)
}

func orElse(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

// Params is the form-mode elicitation for req: the Summary as the
// message, and a schema asking for a decision (approve_once,
// approve_session or deny) and an optional reason. The decision is not
// marked required: its default is deny, so a host that submits the form
// untouched denies instead of failing the call.
func Params(req confirm.Request) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: req.Summary(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type":  "string",
					"title": "Decision",
					"oneOf": []any{
						map[string]any{"const": choiceOnce, "title": "Approve once"},
						map[string]any{"const": choiceSession, "title": "Approve for this session"},
						map[string]any{"const": choiceDeny, "title": "Deny"},
					},
					"default": choiceDeny,
				},
				"reason": map[string]any{
					"type":        "string",
					"title":       "Reason",
					"description": "Why (asked when you deny; optional)",
				},
			},
		},
	}
}

// inputKey is this process's secret for input ids: an id names one
// operation and cannot be guessed before the question is asked.
var inputKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("confirm: no randomness: " + err.Error())
	}
	return k
}()

// inputID is the id of the confirmation question for req's operation, the
// same in every round of one call within this process.
func inputID(req confirm.Request) string {
	m := hmac.New(sha256.New, inputKey)
	for _, s := range []string{req.Tenant, req.Tool, req.Key} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return "io.github.mcpledger/confirm-" + hex.EncodeToString(m.Sum(nil)[:12])
}

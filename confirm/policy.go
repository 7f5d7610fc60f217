package confirm

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Verdict is what a policy says about a call: run it, ask a person, or refuse.
type Verdict string

// The three verdicts.
const (
	Allow Verdict = "allow"
	Ask   Verdict = "ask"
	Deny  Verdict = "deny"
)

// Valid reports whether v is one of the three verdicts.
func (v Verdict) Valid() bool { return v == Allow || v == Ask || v == Deny }

// Tool is what the policy sees of a tool.
type Tool struct {
	Name string
	// Server is the upstream server's name (its Implementation.Name) or a
	// label the user configured for it.
	Server string
	// Annotations are the server's hints; nil when it sent none.
	Annotations *mcp.ToolAnnotations
}

// Rule is one line of a policy: when the tool name (and the server, when
// given) match and every condition holds, the rule's action is the verdict.
//
// Globs use '*' for any run of characters and '?' for one character, and
// match case-insensitively, so "*delete*" also catches "DeleteUser".
type Rule struct {
	Tool   string      `json:"tool"`
	Server string      `json:"server,omitempty"`
	When   *Conditions `json:"when,omitempty"`
	Action Verdict     `json:"action"`
	// Note says why the rule exists; Explain repeats it.
	Note string `json:"note,omitempty"`
}

// Conditions are tests on a tool's annotations. Every condition that is set
// must hold. Hints follow the MCP defaults when the server sent annotations
// but left a hint out (destructive and open world default to true). When the
// server sent no annotations at all, nothing is known: only Annotated=false
// matches, and every other condition fails.
//
// A rule with conditions and the action allow counts only for trusted
// servers: an untrusted server's annotations may make a call ask or be
// denied, never let it through (they are hints, and a server can lie).
type Conditions struct {
	ReadOnly    *bool `json:"readOnly,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"openWorld,omitempty"`
	Annotated   *bool `json:"annotated,omitempty"`
}

// Policy decides allow, ask or deny for each tool. Rules are tried in order
// and the first match wins; when none matches the verdict is Ask, so a
// policy without a catch-all rule fails toward a person, not toward running.
//
// A nil *Policy behaves as Default().
type Policy struct {
	Rules []Rule `json:"rules"`
	// Trusted lists server-name globs whose annotations may allow a call.
	Trusted []string `json:"trusted,omitempty"`

	source string // file the policy came from, for Explain; "" for built-ins
}

// SensitiveNames are the tool-name globs the default policy asks about: names
// that suggest deleting, moving money, or sending something out of the
// system. It is a heuristic tuned to err toward asking. "*post*" is left out
// on purpose (it matches get_posts, postgres_query, postal_code); "*email*"
// is in, so a read tool named list_emails asks until a policy rule or a
// trusted server's readOnlyHint allows it.
var SensitiveNames = []string{
	// destruction
	"*delete*", "*remove*", "*drop*", "*destroy*", "*purge*", "*truncate*",
	"*wipe*", "*erase*", "*revoke*", "*cancel*",
	// money ("*pay*" covers payment, payout, repay)
	"*pay*", "*transfer*", "*refund*", "*withdraw*", "*charge*", "*purchase*",
	// messages and publication
	"*send*", "*publish*", "*email*",
}

// Default is the policy used when there is no policy file:
//
//  1. allow a tool a trusted server marks readOnlyHint (no server is trusted
//     by default, so this needs a policy file naming the server);
//  2. ask for a tool whose annotations say it is destructive (this counts for
//     untrusted servers too: a hint toward caution is always taken);
//  3. ask for a tool whose name matches one of SensitiveNames;
//  4. allow everything else.
//
// With it, create_payment asks (its name says pay) and get_payment runs.
func Default() *Policy {
	yes := true
	rules := []Rule{
		{Tool: "*", When: &Conditions{ReadOnly: &yes}, Action: Allow,
			Note: "a trusted server marks it read-only"},
		{Tool: "*", When: &Conditions{Destructive: &yes}, Action: Ask,
			Note: "its annotations say it is destructive"},
	}
	for _, g := range SensitiveNames {
		rules = append(rules, Rule{Tool: g, Action: Ask,
			Note: "its name suggests deleting, moving money or sending"})
	}
	rules = append(rules, Rule{Tool: "*", Action: Allow,
		Note: "nothing suggests a sensitive effect"})
	return &Policy{Rules: rules}
}

// defaultPolicy serves nil receivers without rebuilding the rules per call.
var defaultPolicy = Default()

// Decide returns the verdict for t.
func (p *Policy) Decide(t Tool) Verdict {
	v, _ := p.Explain(t)
	return v
}

// Explain returns the verdict for t and a one-line reason naming the rule
// that decided it, for prompts, logs and the ledger's approval record.
func (p *Policy) Explain(t Tool) (Verdict, string) {
	if p == nil {
		p = defaultPolicy
	}
	trusted := p.Trusts(t.Server)
	h := hintsOf(t.Annotations)
	for i := range p.Rules {
		r := &p.Rules[i]
		if !Match(r.Tool, t.Name) {
			continue
		}
		if r.Server != "" && !Match(r.Server, t.Server) {
			continue
		}
		if r.When != nil {
			if r.Action == Allow && !trusted {
				continue
			}
			if !r.When.holds(h) {
				continue
			}
		}
		return r.Action, p.describe(i)
	}
	return Ask, "no policy rule matched; asking is the fallback"
}

// Trusts reports whether the policy counts server's annotations.
func (p *Policy) Trusts(server string) bool {
	if p == nil {
		return false
	}
	for _, g := range p.Trusted {
		if Match(g, server) {
			return true
		}
	}
	return false
}

func (p *Policy) describe(i int) string {
	r := p.Rules[i]
	var b strings.Builder
	if p.source != "" {
		fmt.Fprintf(&b, "%s rule %d", p.source, i+1)
	} else {
		b.WriteString("default policy")
	}
	fmt.Fprintf(&b, ": tool %q", r.Tool)
	if r.Server != "" {
		fmt.Fprintf(&b, " on server %q", r.Server)
	}
	if r.When != nil {
		fmt.Fprintf(&b, " when %s", r.When)
	}
	fmt.Fprintf(&b, " -> %s", r.Action)
	if r.Note != "" {
		fmt.Fprintf(&b, " (%s)", r.Note)
	}
	return b.String()
}

// String lists the set conditions, e.g. "readOnly=true, openWorld=false".
func (c *Conditions) String() string {
	var parts []string
	add := func(name string, v *bool) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s=%t", name, *v))
		}
	}
	add("readOnly", c.ReadOnly)
	add("destructive", c.Destructive)
	add("idempotent", c.Idempotent)
	add("openWorld", c.OpenWorld)
	add("annotated", c.Annotated)
	return strings.Join(parts, ", ")
}

// hints are a tool's annotations with the MCP defaults applied.
type hints struct {
	annotated                                    bool
	readOnly, destructive, idempotent, openWorld bool
}

func hintsOf(a *mcp.ToolAnnotations) hints {
	if a == nil {
		return hints{}
	}
	return hints{
		annotated: true,
		readOnly:  a.ReadOnlyHint,
		// The spec gives destructiveHint meaning only when the tool is not
		// read-only; unset means true.
		destructive: !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint),
		idempotent:  a.IdempotentHint,
		openWorld:   a.OpenWorldHint == nil || *a.OpenWorldHint,
	}
}

func (c *Conditions) holds(h hints) bool {
	if c.Annotated != nil && *c.Annotated != h.annotated {
		return false
	}
	hint := func(want *bool, got bool) bool {
		// Without annotations a hint is unknown, and an unknown hint
		// satisfies no condition.
		return want == nil || (h.annotated && *want == got)
	}
	return hint(c.ReadOnly, h.readOnly) &&
		hint(c.Destructive, h.destructive) &&
		hint(c.Idempotent, h.idempotent) &&
		hint(c.OpenWorld, h.openWorld)
}

package confirm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Verdict is what a policy says about a call: run it, ask a person now,
// queue it for a person to decide later, or refuse.
type Verdict string

// The four verdicts.
const (
	Allow Verdict = "allow"
	Ask   Verdict = "ask"
	Deny  Verdict = "deny"
	// Queue records the call as awaiting approval and answers at once; a
	// person approves or denies it later (agentctl ledger approve, the web
	// console) and the next call with its key runs or gets the denial.
	Queue Verdict = "queue"
)

// Valid reports whether v is one of the four verdicts.
func (v Verdict) Valid() bool { return v == Allow || v == Ask || v == Deny || v == Queue }

// DefaultApprovalExpiry is how long a queued approval waits for a person.
const DefaultApprovalExpiry = 24 * time.Hour

// Tool is what the policy sees of a tool.
type Tool struct {
	Name string
	// Server is the upstream server's name (its Implementation.Name) or a
	// label the user configured for it.
	Server string
	// Hints are the server's annotations; nil when it sent none.
	Hints *Hints
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
	// Expiry is how long a call this rule queues waits for a person
	// (the policy's ApprovalExpiry when zero).
	Expiry time.Duration `json:"expiry,omitempty"`
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
	// WhenNoOneCanBeAsked, when Queue, queues an "ask" call that finds no
	// one to ask (no terminal, a host without elicitation) instead of
	// rejecting it.
	WhenNoOneCanBeAsked Verdict `json:"whenNoOneCanBeAsked,omitempty"`
	// DistinctApprover requires the person who approves a queued call to
	// be someone other than its requester (separation of duties).
	DistinctApprover bool `json:"distinctApprover,omitempty"`
	// ApprovalExpiry is how long a queued call waits for a person
	// (DefaultApprovalExpiry when zero); a rule's Expiry overrides it.
	ApprovalExpiry time.Duration `json:"approvalExpiry,omitempty"`
	// Reconcile names, per tool, the probe that settles its UNKNOWN calls
	// (see Probe). It is not part of Version: a changed probe does not
	// invalidate approvals.
	Reconcile []*Probe `json:"-"`

	source string // file the policy came from, for Explain; "" for built-ins
}

// Version names this policy's content: a digest of its rules and
// settings. Approvals are bound to it, so a changed policy invalidates the
// queued and standing approvals given under the old one, while two
// processes with the same policy agree on its version.
func (p *Policy) Version() string {
	if p == nil {
		p = defaultPolicy
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Every field is a plain value: only a programming mistake gets here.
		panic(fmt.Sprintf("confirm: encode policy: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Expiry returns how long a queued call of t waits for a person.
func (p *Policy) Expiry(t Tool) time.Duration {
	if p == nil {
		return DefaultApprovalExpiry
	}
	if i, _ := p.match(t); i >= 0 && p.Rules[i].Expiry > 0 {
		return p.Rules[i].Expiry
	}
	if p.ApprovalExpiry > 0 {
		return p.ApprovalExpiry
	}
	return DefaultApprovalExpiry
}

// QueuesUnasked reports whether an "ask" call with no one to ask is queued
// rather than rejected.
func (p *Policy) QueuesUnasked() bool {
	return p != nil && p.WhenNoOneCanBeAsked == Queue
}

// ReadNames are the tool-name globs the default policy takes for reads:
// names that start with a reading verb, so get_payment runs while
// create_payment asks. A name is only a hint: this protects against honest
// tools with dangerous effects, not against a server that lies.
const ReadNames = "get_*|get-*|list_*|list-*|search_*|search-*|find_*|find-*|" +
	"read_*|read-*|fetch_*|fetch-*|describe_*|describe-*|show_*|show-*|" +
	"lookup_*|lookup-*|view_*|view-*|count_*|count-*|query_*|query-*"

// SensitiveNames are the tool-name globs the default policy asks about
// (unless the name starts with a reading verb, see ReadNames): names that
// suggest deleting, moving money, or sending something out of the system.
// The globs match anywhere in the name ("*pay*" catches create_payment,
// payout and repay), erring toward asking. "post" counts only as the first
// word: "*post*" would catch postgres_query and postal_code.
const SensitiveNames = "*delete*|*remove*|*drop*|*destroy*|*purge*|*truncate*|" +
	"*wipe*|*erase*|*revoke*|*cancel*|" +
	"*pay*|*transfer*|*refund*|*withdraw*|*charge*|*purchase*|" +
	"*send*|*publish*|*email*|post_*|post-*"

// Default is the policy used when there is no policy file. In order, first
// match wins:
//
//  1. allow a tool a trusted server marks readOnlyHint (no server is trusted
//     by default, so this needs a policy file naming the server);
//  2. ask for a tool whose annotations say it is destructive (this counts for
//     untrusted servers too: a hint toward caution is always taken);
//  3. allow a tool whose name starts with a reading verb (ReadNames);
//  4. ask for a tool whose name suggests a sensitive effect (SensitiveNames);
//  5. allow everything else.
//
// With it, create_payment asks (its name says pay) and get_payment runs.
func Default() *Policy {
	yes := true
	return &Policy{Rules: []Rule{
		{Tool: "*", When: &Conditions{ReadOnly: &yes}, Action: Allow,
			Note: "a trusted server marks it read-only"},
		{Tool: "*", When: &Conditions{Destructive: &yes}, Action: Ask,
			Note: "its annotations say it is destructive"},
		{Tool: ReadNames, Action: Allow,
			Note: "its name starts with a reading verb"},
		{Tool: SensitiveNames, Action: Ask,
			Note: "its name suggests deleting, moving money or sending"},
		{Tool: "*", Action: Allow,
			Note: "nothing suggests a sensitive effect"},
	}}
}

// defaultPolicy serves nil receivers without rebuilding the rules per call.
var defaultPolicy = Default()

// Decide returns the verdict for t.
func (p *Policy) Decide(t Tool) Verdict {
	if p == nil {
		p = defaultPolicy
	}
	i, _ := p.match(t)
	if i < 0 {
		return Ask
	}
	return p.Rules[i].Action
}

// Explain returns the verdict for t and a one-line reason naming the rule
// that decided it, for prompts, logs and the ledger's approval record.
func (p *Policy) Explain(t Tool) (Verdict, string) {
	if p == nil {
		p = defaultPolicy
	}
	i, alt := p.match(t)
	if i < 0 {
		return Ask, "no policy rule matched; asking is the fallback"
	}
	return p.Rules[i].Action, p.describe(i, alt)
}

// match returns the index of the first rule that applies to t (-1 for none)
// and the alternative of its tool glob that matched.
func (p *Policy) match(t Tool) (int, string) {
	trusted := p.Trusts(t.Server)
	h := hintsOf(t.Hints)
	for i := range p.Rules {
		r := &p.Rules[i]
		toolAlt, ok := matchAlt(r.Tool, t.Name)
		if !ok {
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
		return i, toolAlt
	}
	return -1, ""
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

// describe names rule i and, for a rule with alternatives, the one that
// matched (a reason quoting twenty globs helps nobody).
func (p *Policy) describe(i int, toolAlt string) string {
	r := p.Rules[i]
	var b strings.Builder
	if p.source != "" {
		fmt.Fprintf(&b, "%s rule %d", p.source, i+1)
	} else {
		b.WriteString("default policy")
	}
	fmt.Fprintf(&b, ": tool %q", toolAlt)
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

func hintsOf(a *Hints) hints {
	if a == nil {
		return hints{}
	}
	readOnly := a.ReadOnly != nil && *a.ReadOnly
	return hints{
		annotated: true,
		readOnly:  readOnly,
		// The spec gives destructiveHint meaning only when the tool is not
		// read-only; unset means true.
		destructive: !readOnly && (a.Destructive == nil || *a.Destructive),
		idempotent:  a.Idempotent != nil && *a.Idempotent,
		openWorld:   a.OpenWorld == nil || *a.OpenWorld,
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

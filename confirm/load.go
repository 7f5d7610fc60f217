package confirm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// The policy file is JSON. JSON needs nothing outside the standard library,
// it is what MCP hosts already use for their server configuration, and a
// strict reader is short enough to keep here: unknown fields, duplicate
// fields (encoding/json silently keeps the last one, so {"action":"deny",
// "action":"allow"} would allow) and wrong types are all errors with a line
// and column. JSON has no comments; every rule has a "note" field instead.
//
//	{
//	  "version": 1,
//	  "trusted": ["payments"],
//	  "rules": [
//	    {"tool": "create_payment", "server": "payments", "action": "ask",
//	     "note": "money leaves the account"},
//	    {"tool": "get_*", "action": "allow"},
//	    {"tool": "*", "when": {"destructive": true}, "action": "deny"}
//	  ]
//	}
//
// The file's rules come first; the rules of Default follow them unless the
// file says "defaults": false. With "defaults": false and no catch-all rule,
// a tool no rule matches asks.

// ErrInvalidPolicy is matched (errors.Is) by every error Parse and Load
// return for a malformed policy. An unreadable file is not this error.
var ErrInvalidPolicy = errors.New("confirm: invalid policy")

// PolicyError locates a problem in a policy file.
type PolicyError struct {
	File   string // "" when parsed from bytes
	Line   int    // 1-based
	Column int    // 1-based, in bytes
	Field  string // e.g. "rules[2].action"; "" for the document
	Msg    string
}

func (e *PolicyError) Error() string {
	file := e.File
	if file == "" {
		file = "policy"
	}
	field := ""
	if e.Field != "" {
		field = e.Field + ": "
	}
	return fmt.Sprintf("confirm: %s:%d:%d: %s%s", file, e.Line, e.Column, field, e.Msg)
}

// Is makes errors.Is(err, ErrInvalidPolicy) true.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidPolicy }

// maxPolicySize bounds what Parse reads; a policy is a few kilobytes.
const maxPolicySize = 1 << 20

// Load reads the policy file at path. A missing or unreadable file is an
// error (never the defaults: a typo in --policy must not relax anything).
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("confirm: reading policy: %w", err)
	}
	p, err := Parse(data)
	var pe *PolicyError
	if errors.As(err, &pe) {
		pe.File = path
		return nil, pe
	}
	if err != nil {
		return nil, err
	}
	p.source = path
	return p, nil
}

// Parse reads a policy from JSON (the format Load documents).
func Parse(data []byte) (*Policy, error) {
	if len(data) > maxPolicySize {
		return nil, &PolicyError{Line: 1, Column: 1, Msg: fmt.Sprintf("file is larger than %d bytes", maxPolicySize)}
	}
	tp := &treeParser{dec: json.NewDecoder(bytes.NewReader(data)), data: data}
	tp.dec.UseNumber()
	root, err := tp.value(0)
	if err != nil {
		return nil, tp.syntaxError(err)
	}
	end := tp.start()
	if _, err := tp.dec.Token(); err != io.EOF {
		return nil, tp.errAt(end, "", "unexpected data after the policy object")
	}
	return tp.policy(root)
}

// node is a JSON value with the byte offset where it starts.
type node struct {
	off   int
	kind  byte // 'o' object, 'a' array, 's' string, 'b' bool, 'n' number, 'z' null
	str   string
	b     bool
	num   json.Number
	elems []*node
	keys  []field
}

type field struct {
	name string
	off  int
	val  *node
}

type treeParser struct {
	dec  *json.Decoder
	data []byte
}

// maxDepth is far beyond what a policy needs and keeps recursion bounded.
const maxDepth = 16

// start is where the next token begins: json.Decoder's offset stops after
// the previous token, before any whitespace, ':' or ','.
func (tp *treeParser) start() int {
	i := int(tp.dec.InputOffset())
	for i < len(tp.data) && strings.IndexByte(" \t\r\n:,", tp.data[i]) >= 0 {
		i++
	}
	return i
}

func (tp *treeParser) value(depth int) (*node, error) {
	off := tp.start()
	if depth > maxDepth {
		return nil, tp.errAt(off, "", "nested too deeply")
	}
	tok, err := tp.dec.Token()
	if err != nil {
		return nil, err
	}
	n := &node{off: off}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			n.kind = 'a'
			for tp.dec.More() {
				e, err := tp.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, e)
			}
		} else {
			n.kind = 'o'
			for tp.dec.More() {
				koff := tp.start()
				ktok, err := tp.dec.Token()
				if err != nil {
					return nil, err
				}
				name, _ := ktok.(string) // object keys are always strings
				v, err := tp.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, field{name: name, off: koff, val: v})
			}
		}
		if _, err := tp.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = 's', t
	case bool:
		n.kind, n.b = 'b', t
	case json.Number:
		n.kind, n.num = 'n', t
	case nil:
		n.kind = 'z'
	}
	return n, nil
}

func (tp *treeParser) syntaxError(err error) error {
	var pe *PolicyError
	if errors.As(err, &pe) {
		return pe
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// The streaming decoder counts offsets from where its current
		// value began; a whole-document scan gives the absolute one.
		var v any
		if uerr := json.Unmarshal(tp.data, &v); errors.As(uerr, &se) {
			err = se
		}
		off := int(se.Offset) - 1
		if off < 0 {
			off = 0
		}
		return tp.errAt(off, "", "invalid JSON: "+strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if len(bytes.TrimSpace(tp.data)) == 0 {
			return tp.errAt(0, "", `empty file; write {"rules": []} for the defaults alone`)
		}
		return tp.errAt(len(tp.data), "", "unexpected end of file")
	}
	return tp.errAt(tp.start(), "", "invalid JSON: "+err.Error())
}

func (tp *treeParser) errAt(off int, path, msg string) *PolicyError {
	if off > len(tp.data) {
		off = len(tp.data)
	}
	line := 1 + bytes.Count(tp.data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(tp.data[:off], '\n')
	return &PolicyError{Line: line, Column: col, Field: path, Msg: msg}
}

var kindNames = map[byte]string{'o': "an object", 'a': "an array", 's': "a string", 'b': "true or false", 'n': "a number", 'z': "null"}

func (tp *treeParser) want(n *node, kind byte, path string) error {
	if n.kind == kind {
		return nil
	}
	return tp.errAt(n.off, path, fmt.Sprintf("want %s, got %s", kindNames[kind], kindNames[n.kind]))
}

// fields checks an object's keys against the allowed ones and returns them
// by name.
func (tp *treeParser) fields(n *node, path string, allowed ...string) (map[string]*node, error) {
	if err := tp.want(n, 'o', path); err != nil {
		return nil, err
	}
	out := make(map[string]*node, len(n.keys))
	for _, f := range n.keys {
		fpath := join(path, f.name)
		if !contains(allowed, f.name) {
			return nil, tp.errAt(f.off, fpath, fmt.Sprintf("unknown field %q (want one of %s)", f.name, strings.Join(allowed, ", ")))
		}
		if _, dup := out[f.name]; dup {
			return nil, tp.errAt(f.off, fpath, "duplicate field")
		}
		out[f.name] = f.val
	}
	return out, nil
}

func (tp *treeParser) policy(root *node) (*Policy, error) {
	top, err := tp.fields(root, "", "version", "trusted", "rules", "defaults", "whenNoOneCanBeAsked", "distinctApprover", "approvalExpiry", "reconcile")
	if err != nil {
		return nil, err
	}
	if v, ok := top["version"]; ok {
		if v.kind != 'n' || v.num.String() != "1" {
			return nil, tp.errAt(v.off, "version", "unsupported version; this reader knows version 1")
		}
	}
	p := &Policy{}
	if t, ok := top["trusted"]; ok {
		if err := tp.want(t, 'a', "trusted"); err != nil {
			return nil, err
		}
		for i, e := range t.elems {
			s, err := tp.glob(e, fmt.Sprintf("trusted[%d]", i))
			if err != nil {
				return nil, err
			}
			p.Trusted = append(p.Trusted, s)
		}
	}
	if r, ok := top["rules"]; ok {
		if err := tp.want(r, 'a', "rules"); err != nil {
			return nil, err
		}
		for i, e := range r.elems {
			rule, err := tp.rule(e, fmt.Sprintf("rules[%d]", i))
			if err != nil {
				return nil, err
			}
			p.Rules = append(p.Rules, rule)
		}
	}
	if err := tp.approvals(top, p); err != nil {
		return nil, err
	}
	if r, ok := top["reconcile"]; ok {
		if err := tp.reconcile(r, p); err != nil {
			return nil, err
		}
	}
	defaults := true
	if d, ok := top["defaults"]; ok {
		if err := tp.want(d, 'b', "defaults"); err != nil {
			return nil, err
		}
		defaults = d.b
	}
	if defaults {
		p.Rules = append(p.Rules, Default().Rules...)
	}
	return p, nil
}

func (tp *treeParser) rule(n *node, path string) (Rule, error) {
	f, err := tp.fields(n, path, "tool", "server", "when", "action", "note", "expiry")
	if err != nil {
		return Rule{}, err
	}
	var r Rule
	t, ok := f["tool"]
	if !ok {
		return Rule{}, tp.errAt(n.off, path, `missing "tool" (use "*" for every tool)`)
	}
	if r.Tool, err = tp.glob(t, path+".tool"); err != nil {
		return Rule{}, err
	}
	if s, ok := f["server"]; ok {
		if r.Server, err = tp.glob(s, path+".server"); err != nil {
			return Rule{}, err
		}
	}
	a, ok := f["action"]
	if !ok {
		return Rule{}, tp.errAt(n.off, path, `missing "action" (allow, ask, queue or deny)`)
	}
	if err := tp.want(a, 's', path+".action"); err != nil {
		return Rule{}, err
	}
	r.Action = Verdict(a.str)
	if !r.Action.Valid() {
		return Rule{}, tp.errAt(a.off, path+".action", fmt.Sprintf("%q is not allow, ask, queue or deny", a.str))
	}
	if e, ok := f["expiry"]; ok {
		if r.Expiry, err = tp.duration(e, path+".expiry"); err != nil {
			return Rule{}, err
		}
	}
	if note, ok := f["note"]; ok {
		if err := tp.want(note, 's', path+".note"); err != nil {
			return Rule{}, err
		}
		r.Note = note.str
	}
	if w, ok := f["when"]; ok {
		if r.When, err = tp.conditions(w, path+".when"); err != nil {
			return Rule{}, err
		}
	}
	return r, nil
}

func (tp *treeParser) conditions(n *node, path string) (*Conditions, error) {
	f, err := tp.fields(n, path, "readOnly", "destructive", "idempotent", "openWorld", "annotated")
	if err != nil {
		return nil, err
	}
	if len(f) == 0 {
		return nil, tp.errAt(n.off, path, "empty; remove it or name a hint")
	}
	c := &Conditions{}
	// A fixed order, so that of two bad fields the same one is reported.
	for _, h := range []struct {
		name string
		dst  **bool
	}{
		{"readOnly", &c.ReadOnly}, {"destructive", &c.Destructive}, {"idempotent", &c.Idempotent},
		{"openWorld", &c.OpenWorld}, {"annotated", &c.Annotated},
	} {
		name, dst := h.name, h.dst
		v, ok := f[name]
		if !ok {
			continue
		}
		if err := tp.want(v, 'b', join(path, name)); err != nil {
			return nil, err
		}
		b := v.b
		*dst = &b
	}
	return c, nil
}

func (tp *treeParser) glob(n *node, path string) (string, error) {
	if err := tp.want(n, 's', path); err != nil {
		return "", err
	}
	if strings.TrimSpace(n.str) == "" {
		return "", tp.errAt(n.off, path, `empty glob (use "*" for any)`)
	}
	return n.str, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// approvals reads the policy's settings for queued approvals.
func (tp *treeParser) approvals(top map[string]*node, p *Policy) error {
	if w, ok := top["whenNoOneCanBeAsked"]; ok {
		if err := tp.want(w, 's', "whenNoOneCanBeAsked"); err != nil {
			return err
		}
		if w.str != string(Queue) && w.str != "reject" {
			return tp.errAt(w.off, "whenNoOneCanBeAsked", fmt.Sprintf("%q is not queue or reject", w.str))
		}
		if w.str == string(Queue) {
			p.WhenNoOneCanBeAsked = Queue
		}
	}
	if d, ok := top["distinctApprover"]; ok {
		if err := tp.want(d, 'b', "distinctApprover"); err != nil {
			return err
		}
		p.DistinctApprover = d.b
	}
	if e, ok := top["approvalExpiry"]; ok {
		d, err := tp.duration(e, "approvalExpiry")
		if err != nil {
			return err
		}
		p.ApprovalExpiry = d
	}
	return nil
}

// duration reads a positive Go duration string ("24h", "90m").
func (tp *treeParser) duration(n *node, path string) (time.Duration, error) {
	if err := tp.want(n, 's', path); err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(n.str)
	if err != nil || d <= 0 {
		return 0, tp.errAt(n.off, path, fmt.Sprintf("%q is not a positive duration such as 24h or 90m", n.str))
	}
	return d, nil
}

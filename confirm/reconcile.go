package confirm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// A policy file's "reconcile" section names, per tool, a probe: a
// read-only tool of the same server that tells whether an UNKNOWN call of
// the tool took effect (DESIGN.md, "Reconciliation"). It serves servers
// that do not honour keys; a key-aware server answers a re-send instead.
//
//	"reconcile": [
//	  {"tool": "create_payment", "probe": "find_payment",
//	   "arguments": {"idempotency_key": "{{.Key}}"},
//	   "absent": "not_run", "quiet": "30s"}
//	]
//
// Each string of "arguments" is a text/template: {{.Key}} is the key as it
// was sent upstream, {{.Arguments.NAME}} a field of the original call's
// arguments. The probe's answer convention: a result means found, and it
// is the replay; an isError result means absent; a protocol or transport
// error means unknown. "found", when given, is an expression
// (github.com/expr-lang/expr) over the probe's result that decides found
// against absent instead of isError: result (the CallToolResult as JSON
// values), structured (its structuredContent), text (its text content,
// joined) and isError are its names, e.g.
//
//	"found": "structured.status in ['paid', 'settled']"

// Absent is what a probe's "absent" answer means.
type Absent string

const (
	// AbsentNotRun: the call did not take effect, once the original
	// request can no longer take effect (its stdio child exited, or the
	// quiet period passed); the same key then runs again.
	AbsentNotRun Absent = "not_run"
	// AbsentAsk: leave the record UNKNOWN for a person, with the probe's
	// evidence.
	AbsentAsk Absent = "ask"
)

// DefaultQuiet is a probe's quiet period when the policy names none: how
// long after the last send an absent answer is believed.
const DefaultQuiet = 30 * time.Second

// Probe is one entry of a policy's reconcile section.
type Probe struct {
	// Tool is the glob of the tools whose UNKNOWN calls this probe settles.
	Tool string `json:"tool"`
	// Probe is the read-only tool of the same server to ask.
	Probe string `json:"probe"`
	// Absent is what an absent answer means (AbsentNotRun by default).
	Absent Absent `json:"absent,omitempty"`
	// Quiet is how long after the call's last send an absent answer is
	// believed (DefaultQuiet when zero); the caller waits at least the
	// call's own deadline too.
	Quiet time.Duration `json:"quiet,omitempty"`
	// Found is the source of the found condition; "" for the answer
	// convention.
	Found string `json:"found,omitempty"`

	args  tmplValue   // the arguments template
	found *vm.Program // compiled Found; nil when there is none
}

// ProbeInput is what a probe's arguments template sees.
type ProbeInput struct {
	// Key is the key as the original call sent it upstream.
	Key string
	// Arguments are the original call's arguments.
	Arguments map[string]any
}

// ProbeFor returns the probe the policy names for tool; nil when none.
func (p *Policy) ProbeFor(tool string) *Probe {
	if p == nil {
		return nil
	}
	for _, pr := range p.Reconcile {
		if Match(pr.Tool, tool) {
			return pr
		}
	}
	return nil
}

// QuietPeriod is Quiet, or DefaultQuiet when it is not set.
func (pr *Probe) QuietPeriod() time.Duration {
	if pr.Quiet > 0 {
		return pr.Quiet
	}
	return DefaultQuiet
}

// Asks reports whether an absent answer is left for a person.
func (pr *Probe) Asks() bool { return pr.Absent == AbsentAsk }

// Arguments builds the probe's arguments for a call sent upstream under
// key with the JSON object args.
func (pr *Probe) Arguments(key string, args json.RawMessage) (json.RawMessage, error) {
	in := ProbeInput{Key: key, Arguments: map[string]any{}}
	if len(args) > 0 {
		d := json.NewDecoder(bytes.NewReader(args))
		d.UseNumber() // a number is spelled as the call spelled it
		if err := d.Decode(&in.Arguments); err != nil {
			return nil, fmt.Errorf("confirm: probe %s: the call's arguments are not a JSON object: %w", pr.Probe, err)
		}
	}
	v, err := pr.args.fill(&in)
	if err != nil {
		return nil, fmt.Errorf("confirm: probe %s arguments: %w", pr.Probe, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("confirm: probe %s arguments: %w", pr.Probe, err)
	}
	return out, nil
}

// Judge says whether the probe's result (the CallToolResult JSON, whose
// isError is isError) means found: by the found condition when there is
// one, else by the answer convention (found unless isError). An error
// means the condition could not be evaluated: nothing is known.
func (pr *Probe) Judge(result json.RawMessage, isError bool) (bool, error) {
	if pr.found == nil {
		return !isError, nil
	}
	var res map[string]any
	if err := json.Unmarshal(result, &res); err != nil {
		return false, fmt.Errorf("confirm: probe %s: its result is not a JSON object: %w", pr.Probe, err)
	}
	out, err := expr.Run(pr.found, foundEnv(res, isError))
	if err != nil {
		return false, fmt.Errorf("confirm: probe %s: found condition: %s", pr.Probe, firstLine(err.Error()))
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("confirm: probe %s: found condition gave %T, not true or false", pr.Probe, out)
	}
	return b, nil
}

// foundEnv is what the found condition sees of a probe's result.
func foundEnv(res map[string]any, isError bool) map[string]any {
	var text []string
	if cs, ok := res["content"].([]any); ok {
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok && m["type"] == "text" {
				if s, ok := m["text"].(string); ok {
					text = append(text, s)
				}
			}
		}
	}
	return map[string]any{"result": res, "structured": res["structuredContent"], "text": strings.Join(text, " "), "isError": isError}
}

// compileFound compiles a found condition; the names it may use are those
// of foundEnv.
func compileFound(src string) (*vm.Program, error) {
	env := foundEnv(map[string]any{}, false)
	env["structured"] = map[string]any{}
	return expr.Compile(src, expr.Env(env), expr.AsBool())
}

// tmplValue is a JSON value of the arguments template: every string in
// it is a template.
type tmplValue struct {
	tmpl  *template.Template // a string
	obj   []tmplField        // an object (non-nil, maybe empty)
	arr   []tmplValue        // an array
	isArr bool
	lit   any // any other JSON value, as it is
}

type tmplField struct {
	name string
	val  tmplValue
}

// fill executes every template in v with in.
func (v *tmplValue) fill(in *ProbeInput) (any, error) {
	switch {
	case v.tmpl != nil:
		var b strings.Builder
		if err := v.tmpl.Execute(&b, in); err != nil {
			return nil, errors.New(strings.TrimPrefix(err.Error(), "template: "))
		}
		return b.String(), nil
	case v.obj != nil:
		m := make(map[string]any, len(v.obj))
		for i := range v.obj {
			x, err := v.obj[i].val.fill(in)
			if err != nil {
				return nil, err
			}
			m[v.obj[i].name] = x
		}
		return m, nil
	case v.isArr:
		a := make([]any, len(v.arr))
		for i := range v.arr {
			x, err := v.arr[i].fill(in)
			if err != nil {
				return nil, err
			}
			a[i] = x
		}
		return a, nil
	}
	return v.lit, nil
}

// reconcile reads the policy's reconcile section.
func (tp *treeParser) reconcile(n *node, p *Policy) error {
	if err := tp.want(n, 'a', "reconcile"); err != nil {
		return err
	}
	for i, e := range n.elems {
		pr, err := tp.probe(e, fmt.Sprintf("reconcile[%d]", i))
		if err != nil {
			return err
		}
		p.Reconcile = append(p.Reconcile, pr)
	}
	return nil
}

func (tp *treeParser) probe(n *node, path string) (*Probe, error) {
	f, err := tp.fields(n, path, "tool", "probe", "arguments", "absent", "quiet", "found", "note")
	if err != nil {
		return nil, err
	}
	pr := &Probe{Absent: AbsentNotRun}
	t, ok := f["tool"]
	if !ok {
		return nil, tp.errAt(n.off, path, `missing "tool": the tool whose UNKNOWN calls the probe settles`)
	}
	if pr.Tool, err = tp.glob(t, path+".tool"); err != nil {
		return nil, err
	}
	pn, ok := f["probe"]
	if !ok {
		return nil, tp.errAt(n.off, path, `missing "probe": a read-only tool of the same server to ask`)
	}
	if err := tp.want(pn, 's', path+".probe"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(pn.str) == "" || strings.ContainsAny(pn.str, "*?|") {
		return nil, tp.errAt(pn.off, path+".probe", fmt.Sprintf("%q is not a tool name; name the read-only tool to call", pn.str))
	}
	pr.Probe = pn.str
	a, ok := f["arguments"]
	if !ok {
		return nil, tp.errAt(n.off, path, `missing "arguments", e.g. {"idempotency_key": "{{.Key}}"}`)
	}
	if err := tp.want(a, 'o', path+".arguments"); err != nil {
		return nil, err
	}
	if pr.args, err = tp.template(a, path+".arguments"); err != nil {
		return nil, err
	}
	if ab, ok := f["absent"]; ok {
		if err := tp.want(ab, 's', path+".absent"); err != nil {
			return nil, err
		}
		pr.Absent = Absent(ab.str)
		if pr.Absent != AbsentNotRun && pr.Absent != AbsentAsk {
			return nil, tp.errAt(ab.off, path+".absent", fmt.Sprintf("%q is not not_run or ask", ab.str))
		}
	}
	if q, ok := f["quiet"]; ok {
		if pr.Quiet, err = tp.duration(q, path+".quiet"); err != nil {
			return nil, err
		}
	}
	if fd, ok := f["found"]; ok {
		if err := tp.want(fd, 's', path+".found"); err != nil {
			return nil, err
		}
		prog, err := compileFound(fd.str)
		if err != nil {
			return nil, tp.errAt(fd.off, path+".found", "not a condition: "+firstLine(err.Error())+"; the names are result, structured, text and isError")
		}
		pr.Found, pr.found = fd.str, prog
	}
	if note, ok := f["note"]; ok {
		if err := tp.want(note, 's', path+".note"); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

// template compiles the arguments template n. Each template is tried
// once on a sample call, so that a name other than .Key and .Arguments
// is an error now, not at the first probe.
func (tp *treeParser) template(n *node, path string) (tmplValue, error) {
	switch n.kind {
	case 's':
		t, err := template.New(path).Option("missingkey=error").Parse(n.str)
		if err != nil {
			return tmplValue{}, tp.errAt(n.off, path, "not a template: "+strings.TrimPrefix(firstLine(err.Error()), "template: "))
		}
		try, err := t.Clone()
		if err != nil {
			return tmplValue{}, tp.errAt(n.off, path, "not a template: "+err.Error())
		}
		try.Option("missingkey=zero") // any argument name may be there
		if err := try.Execute(new(strings.Builder), &ProbeInput{Key: "k", Arguments: map[string]any{}}); err != nil {
			return tmplValue{}, tp.errAt(n.off, path, strings.TrimPrefix(firstLine(err.Error()), "template: ")+"; use {{.Key}} or {{.Arguments.NAME}}")
		}
		return tmplValue{tmpl: t}, nil
	case 'o':
		v := tmplValue{obj: []tmplField{}}
		for _, f := range n.keys {
			fv, err := tp.template(f.val, join(path, f.name))
			if err != nil {
				return tmplValue{}, err
			}
			v.obj = append(v.obj, tmplField{name: f.name, val: fv})
		}
		return v, nil
	case 'a':
		v := tmplValue{isArr: true}
		for i, e := range n.elems {
			ev, err := tp.template(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return tmplValue{}, err
			}
			v.arr = append(v.arr, ev)
		}
		return v, nil
	case 'n':
		return tmplValue{lit: n.num}, nil
	case 'b':
		return tmplValue{lit: n.b}, nil
	}
	return tmplValue{}, nil // null
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Package gitleaks is the table of secret shapes that package redact
// looks for in values: gitleaks' rules (github.com/gitleaks/gitleaks,
// config/gitleaks.toml, MIT licence: LICENSE beside this file), as
// rules.json, which gen/ writes from the vendored gitleaks.toml:
//
//	go generate ./ledger/redact/internal/gitleaks
//
// Each rule is compiled with Go's regexp once, on first use. A rule runs
// only on text that holds one of its keywords (lower case), the way
// gitleaks prefilters; its secret is the rule's secret group, else the
// first capture group that matched, else the whole match; a secret whose
// Shannon entropy is not above the rule's threshold, or that one of the
// rule's or the global allowlists allows (their regexes and stop words),
// is no finding. Allowlists of file paths and commits, which a value has
// none of, were left out by gen.
package gitleaks

//go:generate env GOWORK=off go run -C gen . -in ../gitleaks.toml -license ../LICENSE -out ../rules.json

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

//go:embed rules.json
var rulesJSON []byte

// Rule is one compiled rule.
type Rule struct {
	ID       string
	Keywords []string // lower case
	Re       *regexp.Regexp
	// Entropy: a secret must have more than this Shannon entropy (0: no
	// threshold).
	Entropy     float64
	SecretGroup int
	allow       []allowlist
}

type allowlist struct {
	target    string // "" (the secret), "match" or "line"
	re        *regexp.Regexp
	stopwords []string // lower case
}

// Table is the compiled rules.
type Table struct {
	Rules []Rule
	// Notice is gitleaks' licence notice, which travels with the rules.
	Notice string
	global []allowlist
	// keywords are every rule's keywords, and byKeyword the rules each
	// one triggers; byStart indexes them by their first two bytes, so a
	// text is read once, not once per keyword.
	keywords  []string
	byKeyword map[string][]int
	byStart   [256][]start
}

// start is the keywords whose second byte is second (under the first
// byte that indexes it).
type start struct {
	second   byte
	keywords []int // indices into keywords
}

var (
	once   sync.Once
	loaded *Table
	lerr   error
)

// Load returns the table, compiled on the first call.
func Load() (*Table, error) {
	once.Do(func() { loaded, lerr = parse(rulesJSON) })
	return loaded, lerr
}

type fileRule struct {
	ID          string      `json:"id"`
	Regex       string      `json:"regex"`
	Keywords    []string    `json:"keywords"`
	Entropy     float64     `json:"entropy"`
	SecretGroup int         `json:"secretGroup"`
	Allowlists  []fileAllow `json:"allowlists"`
}

type fileAllow struct {
	RegexTarget string   `json:"regexTarget"`
	Regexes     []string `json:"regexes"`
	StopWords   []string `json:"stopwords"`
}

func parse(b []byte) (*Table, error) {
	var f struct {
		Notice string     `json:"notice"`
		Global *fileAllow `json:"global"`
		Rules  []fileRule `json:"rules"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("gitleaks: rules.json: %w", err)
	}
	t := &Table{Notice: f.Notice, byKeyword: map[string][]int{}}
	if f.Global != nil {
		a, err := compileAllow(*f.Global)
		if err != nil {
			return nil, fmt.Errorf("gitleaks: the global allowlist: %w", err)
		}
		t.global = []allowlist{a}
	}
	for _, fr := range f.Rules {
		re, err := regexp.Compile(fr.Regex)
		if err != nil {
			return nil, fmt.Errorf("gitleaks: rule %s: %w", fr.ID, err)
		}
		r := Rule{ID: fr.ID, Keywords: fr.Keywords, Re: re, Entropy: fr.Entropy, SecretGroup: fr.SecretGroup}
		for _, fa := range fr.Allowlists {
			a, err := compileAllow(fa)
			if err != nil {
				return nil, fmt.Errorf("gitleaks: rule %s: %w", fr.ID, err)
			}
			r.allow = append(r.allow, a)
		}
		for _, k := range r.Keywords {
			if _, ok := t.byKeyword[k]; !ok {
				t.keywords = append(t.keywords, k)
			}
			t.byKeyword[k] = append(t.byKeyword[k], len(t.Rules))
		}
		t.Rules = append(t.Rules, r)
	}
	for i, k := range t.keywords {
		if len(k) < 2 {
			return nil, fmt.Errorf("gitleaks: keyword %q is shorter than two bytes", k)
		}
		b := &t.byStart[k[0]]
		j := 0
		for j < len(*b) && (*b)[j].second != k[1] {
			j++
		}
		if j == len(*b) {
			*b = append(*b, start{second: k[1]})
		}
		(*b)[j].keywords = append((*b)[j].keywords, i)
	}
	return t, nil
}

// scan calls fn with the index of every keyword that occurs in lower,
// reading it once; fn returns false to stop.
func (t *Table) scan(lower string, fn func(kw int) bool) {
	for i := 0; i+1 < len(lower); i++ {
		for _, st := range t.byStart[lower[i]] {
			if st.second != lower[i+1] {
				continue
			}
			for _, k := range st.keywords {
				if strings.HasPrefix(lower[i:], t.keywords[k]) && !fn(k) {
					return
				}
			}
		}
	}
}

func compileAllow(fa fileAllow) (allowlist, error) {
	a := allowlist{target: fa.RegexTarget}
	if len(fa.Regexes) > 0 {
		re, err := regexp.Compile("(?:" + strings.Join(fa.Regexes, ")|(?:") + ")")
		if err != nil {
			return a, err
		}
		a.re = re
	}
	for _, w := range fa.StopWords {
		a.stopwords = append(a.stopwords, strings.ToLower(w))
	}
	return a, nil
}

// Span is one secret found in a text: s[Start:End], by rule Rule.
type Span struct {
	Start, End int
	Rule       string
}

// MayHold reports whether lower (a text in lower case) holds a keyword of
// any rule: when it does not, Find finds nothing in it.
func (t *Table) MayHold(lower string) bool {
	found := false
	t.scan(lower, func(int) bool {
		found = true
		return false
	})
	return found
}

// Find returns the secrets of s, by position; lower is s in lower case.
// Spans of several rules may overlap.
func (t *Table) Find(s, lower string) []Span {
	var hit []int
	t.scan(lower, func(k int) bool {
		for _, i := range t.byKeyword[t.keywords[k]] {
			if !slices.Contains(hit, i) {
				hit = append(hit, i)
			}
		}
		return true
	})
	if len(hit) == 0 {
		return nil
	}
	sort.Ints(hit)
	var out []Span
	for _, i := range hit {
		out = t.Rules[i].find(s, t.global, out)
	}
	return out
}

func (r *Rule) find(s string, global []allowlist, out []Span) []Span {
	for _, m := range r.Re.FindAllStringSubmatchIndex(s, -1) {
		// gitleaks trims newlines around a match.
		start, end := m[0], m[1]
		for start < end && s[start] == '\n' {
			start++
		}
		for end > start && s[end-1] == '\n' {
			end--
		}
		if start == end {
			continue
		}
		ss, se := start, end
		if g := r.SecretGroup; g > 0 && 2*g+1 < len(m) {
			if m[2*g] < 0 {
				continue
			}
			ss, se = m[2*g], m[2*g+1]
		} else {
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] >= 0 && m[g+1] > m[g] {
					ss, se = m[g], m[g+1]
					break
				}
			}
		}
		secret := s[ss:se]
		if r.Entropy > 0 && entropy(secret) <= r.Entropy {
			continue
		}
		if allowed(r.allow, s, start, end, secret) || allowed(global, s, start, end, secret) {
			continue
		}
		out = append(out, Span{Start: ss, End: se, Rule: r.ID})
	}
	return out
}

// allowed reports whether an allowlist lets the secret (of the match
// s[start:end]) pass.
func allowed(as []allowlist, s string, start, end int, secret string) bool {
	for _, a := range as {
		target := secret
		switch a.target {
		case "match":
			target = s[start:end]
		case "line":
			ls := strings.LastIndexByte(s[:start], '\n') + 1
			le := strings.IndexByte(s[end:], '\n')
			if le < 0 {
				le = len(s)
			} else {
				le += end
			}
			target = s[ls:le]
		}
		if a.re != nil && target != "" && a.re.MatchString(target) {
			return true
		}
		if len(a.stopwords) > 0 && secret != "" {
			low := strings.ToLower(secret)
			for _, w := range a.stopwords {
				if strings.Contains(low, w) {
					return true
				}
			}
		}
	}
	return false
}

// entropy is the Shannon entropy of s as gitleaks computes it: the
// frequencies of its runes, each count over the length in bytes.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var ascii [128]int
	var other map[rune]int
	for _, c := range s {
		if c < 128 {
			ascii[c]++
			continue
		}
		if other == nil {
			other = map[rune]int{}
		}
		other[c]++
	}
	inv := 1 / float64(len(s))
	var h float64
	add := func(c int) {
		if c > 0 {
			f := float64(c) * inv
			h -= f * math.Log2(f)
		}
	}
	for _, c := range ascii {
		add(c)
	}
	for _, c := range other {
		add(c)
	}
	return h
}

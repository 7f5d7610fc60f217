// Command gen turns gitleaks' rules (config/gitleaks.toml, MIT) into the
// table ledger's secret detector embeds: rules.json, with what redaction
// uses of each rule (its id, regular expression, keywords, secret group,
// entropy threshold, and the allowlists that look at the value) and the
// licence notice. Rules without a regular expression (file paths) and
// allowlists of paths or commits, which a value has none of, are left out.
//
//	go run . -in ../gitleaks.toml -license ../LICENSE -out ../rules.json
//
// It is its own module so that the TOML parser stays out of the library's.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

type config struct {
	Title     string    `toml:"title"`
	Allowlist allowlist `toml:"allowlist"`
	Rules     []rule    `toml:"rules"`
}

type rule struct {
	ID          string      `toml:"id"`
	Regex       string      `toml:"regex"`
	Path        string      `toml:"path"`
	Keywords    []string    `toml:"keywords"`
	Entropy     float64     `toml:"entropy"`
	SecretGroup int         `toml:"secretGroup"`
	Allowlists  []allowlist `toml:"allowlists"`
}

type allowlist struct {
	Condition   string   `toml:"condition"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
	Commits     []string `toml:"commits"`
}

// out is rules.json.
type out struct {
	Source  string    `json:"source"`
	Notice  string    `json:"notice"`
	Global  *outAllow `json:"global,omitempty"`
	Rules   []outRule `json:"rules"`
	Skipped []string  `json:"skipped,omitempty"`
}

type outRule struct {
	ID          string     `json:"id"`
	Regex       string     `json:"regex"`
	Keywords    []string   `json:"keywords,omitempty"`
	Entropy     float64    `json:"entropy,omitempty"`
	SecretGroup int        `json:"secretGroup,omitempty"`
	Allowlists  []outAllow `json:"allowlists,omitempty"`
}

type outAllow struct {
	RegexTarget string   `json:"regexTarget,omitempty"`
	Regexes     []string `json:"regexes,omitempty"`
	StopWords   []string `json:"stopwords,omitempty"`
}

func main() {
	in := flag.String("in", "../gitleaks.toml", "gitleaks' config/gitleaks.toml")
	lic := flag.String("license", "../LICENSE", "gitleaks' LICENSE")
	dst := flag.String("out", "../rules.json", "the table to write")
	source := flag.String("source", "github.com/gitleaks/gitleaks config/gitleaks.toml", "where the rules come from")
	flag.Parse()
	if err := run(*in, *lic, *dst, *source); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, lic, dst, source string) error {
	var c config
	if _, err := toml.DecodeFile(in, &c); err != nil {
		return fmt.Errorf("read %s: %w", in, err)
	}
	notice, err := os.ReadFile(lic)
	if err != nil {
		return err
	}
	o := out{Source: source, Notice: strings.TrimSpace(string(notice))}
	if a, ok := valueAllowlist(c.Allowlist); ok {
		o.Global = &a
	}
	for _, r := range c.Rules {
		if r.Regex == "" {
			o.Skipped = append(o.Skipped, r.ID+": no regex (a rule on file paths)")
			continue
		}
		if _, err := regexp.Compile(r.Regex); err != nil {
			return fmt.Errorf("rule %s: Go's regexp cannot compile it: %w", r.ID, err)
		}
		or := outRule{ID: r.ID, Regex: r.Regex, Entropy: r.Entropy, SecretGroup: r.SecretGroup}
		for _, k := range r.Keywords {
			or.Keywords = append(or.Keywords, strings.ToLower(k))
		}
		for _, a := range r.Allowlists {
			if va, ok := valueAllowlist(a); ok {
				or.Allowlists = append(or.Allowlists, va)
			}
		}
		o.Rules = append(o.Rules, or)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(o); err != nil {
		return err
	}
	return os.WriteFile(dst, b.Bytes(), 0o644)
}

// valueAllowlist keeps what of a looks at a value: its regexes and stop
// words. An allowlist that also needs a path or a commit (condition AND)
// never holds for a value, and one of paths or commits alone says nothing
// about it: both are left out.
func valueAllowlist(a allowlist) (outAllow, bool) {
	if len(a.Regexes) == 0 && len(a.StopWords) == 0 {
		return outAllow{}, false
	}
	if strings.EqualFold(a.Condition, "AND") && (len(a.Paths) > 0 || len(a.Commits) > 0) {
		return outAllow{}, false
	}
	for _, re := range a.Regexes {
		if _, err := regexp.Compile(re); err != nil {
			return outAllow{}, false
		}
	}
	return outAllow{RegexTarget: a.RegexTarget, Regexes: a.Regexes, StopWords: a.StopWords}, true
}

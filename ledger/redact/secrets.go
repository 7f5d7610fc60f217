package redact

import (
	"bytes"
	"encoding/base64"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/mcpledger/mcpledger/ledger/redact/internal/gitleaks"
)

// Secrets are found two ways: by the name of the field that holds them (see
// IsSecretName) and by the shape of the value itself, wherever it sits: in
// a field of any name, in free text, in a log line. This file holds the
// shapes: name=value pairs, read by a small scanner; the project's own few
// patterns (PEM private keys, cut short or whole, Bearer and Basic
// credentials, JWTs, a URL's password, and the API key shapes gitleaks has
// no rule for); then gitleaks' rules, the field's best-kept table
// (internal/gitleaks: the vendored config/gitleaks.toml, generated
// into a table that Go's regexp compiles; no gitleaks module), each run
// only on text that holds one of its keywords.

// A valueRule finds one kind of secret in a string. Of each match only the
// secret part is replaced: the last group that took part in the match,
// else the whole match; so a URL keeps its host and "Bearer" its scheme.
type valueRule struct {
	name string
	// triggers are lower-case literals one of which every match contains;
	// a string holding none of them skips the pattern.
	triggers []string
	re       *regexp.Regexp
	// keep, when set, vets a match (the replaced part): false leaves it.
	keep func(r *Redactor, match string, groups []string) bool
}

// pairsAfter is the index of the rule after which name=value pairs are
// redacted (see redactPairs): a private key spans lines and holds '='.
const pairsAfter = 0

var valueRules = []valueRule{
	{
		name:     "private key",
		triggers: []string{"-----begin"},
		// A key cut off before its END line is still redacted to the end.
		re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`),
	},
	{
		name:     "bearer",
		triggers: []string{"bearer"},
		re:       regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)`),
		// "bearer instruments" is prose; a credential has a digit or is long.
		keep: func(_ *Redactor, m string, _ []string) bool {
			return len(m) >= 20 || strings.ContainsAny(m, "0123456789")
		},
	},
	{
		name:     "basic",
		triggers: []string{"basic"},
		re:       regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/]{6,}={0,2})`),
		// Basic credentials are base64 of "user:password".
		keep: func(_ *Redactor, m string, _ []string) bool {
			b, err := base64.StdEncoding.DecodeString(m)
			if err != nil {
				b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(m, "="))
			}
			return err == nil && bytes.IndexByte(b, ':') > 0
		},
	},
	{
		name:     "jwt",
		triggers: []string{"eyj"},
		re:       regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`),
	},
	{
		name:     "url credentials",
		triggers: []string{"://"},
		re:       regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:([^\s/?#@]+)@`),
	},
	{
		// The API key shapes gitleaks' rules let pass: keys shorter than
		// the providers' full length or of low entropy, and ones its
		// allowlists take for examples. gitleaks' table covers the rest
		// (GitHub classic tokens, GitLab, Google, npm, PyPI, SendGrid and
		// some two hundred more).
		name:     "api key",
		triggers: []string{"sk-", "sk_", "rk-", "rk_", "whsec_", "github_pat_", "xox", "xapp-", "akia", "asia", "abia", "acca", "hf_", "hooks.slack.com"},
		re: regexp.MustCompile(`\b(?:` +
			`(?:sk|rk)[-_][A-Za-z0-9_-]{16,}` + // OpenAI, Anthropic, Stripe secret and restricted keys
			`|whsec_[A-Za-z0-9+/=]{20,}` + // Stripe webhook secrets
			`|github_pat_[A-Za-z0-9_]{30,}` +
			`|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}` + // Slack
			`|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}` + // AWS access key ids
			`|hf_[A-Za-z0-9]{30,}` + // Hugging Face
			`)|hooks\.slack\.com/services/([A-Za-z0-9/]+)`),
	},
}

// Redactor finds secrets in arguments and in text: by field name and by
// value. The zero value (and a nil *Redactor) uses the built-in names and
// value shapes; Names and Patterns add to them, for one tool or for all.
type Redactor struct {
	// Names are more field names whose value is a secret. They are read
	// the way built-in names are: case folded, with '-', '_' and ' '
	// dropped, so "card_number" also matches "CardNumber"; '*' matches any
	// run of characters ("*ssn*").
	Names []string
	// Patterns find more secret values. Every match in a string value (or
	// in text) is replaced by Placeholder; when a group of the pattern took
	// part in the match, only the text of the last such group is.
	Patterns []*regexp.Regexp
}

// Text returns s with every secret value the built-in shapes find
// replaced by Placeholder: for log lines, error texts and prompts.
func Text(s string) string { return (*Redactor)(nil).Text(s) }

// Text returns s with every secret value found replaced by Placeholder.
func (r *Redactor) Text(s string) string {
	return r.redactText(s, valueRules, fieldRules())
}

// redactText is Text with the project's rules and the field's table
// given (the benchmark compares tables).
func (r *Redactor) redactText(s string, rules []valueRule, table *gitleaks.Table) string {
	var lower string // computed once, for the triggers
	for i := range rules {
		rule := &rules[i]
		if i == pairsAfter+1 && strings.ContainsAny(s, "=:") {
			// A pair's value goes whole, "Authorization: Bearer …"
			// included, before the shapes look at its parts.
			s = r.redactPairs(s)
			lower = ""
		}
		if lower == "" {
			lower = strings.ToLower(s)
		}
		if !containsAny(lower, rule.triggers) {
			continue
		}
		s = r.apply(s, rule.re, rule.keep)
		lower = ""
	}
	if table != nil {
		if lower == "" {
			lower = strings.ToLower(s)
		}
		s = redactSpans(s, table.Find(s, lower))
	}
	if r != nil {
		for _, re := range r.Patterns {
			s = r.apply(s, re, nil)
		}
	}
	return s
}

// fieldRules is gitleaks' table, compiled once. It is embedded data: a
// table that does not load is a broken build.
var fieldRules = sync.OnceValue(func() *gitleaks.Table {
	t, err := gitleaks.Load()
	if err != nil {
		panic(err)
	}
	return t
})

// redactSpans replaces each span of s (they may overlap) by Placeholder. A
// span that touches a Placeholder already there is the rest of a secret
// replaced before, or the marker itself: it is left.
func redactSpans(s string, spans []gitleaks.Span) string {
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
	var marks [][2]int
	for i := 0; ; {
		j := strings.Index(s[i:], Placeholder)
		if j < 0 {
			break
		}
		marks = append(marks, [2]int{i + j, i + j + len(Placeholder)})
		i += j + len(Placeholder)
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.Start < last {
			last = max(last, sp.End) // overlaps the span replaced before
			continue
		}
		if touches(marks, sp.Start, sp.End) {
			continue
		}
		b.WriteString(s[last:sp.Start])
		b.WriteString(Placeholder)
		last = sp.End
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// touches reports whether [start, end) overlaps one of marks.
func touches(marks [][2]int, start, end int) bool {
	for _, m := range marks {
		if start < m[1] && m[0] < end {
			return true
		}
	}
	return false
}

// apply replaces the secret part of every match of re in s. A match that
// keep turns down is searched again from its secret part on, so a pair
// like "monkey= password=hunter2" still finds the password.
func (r *Redactor) apply(s string, re *regexp.Regexp, keep func(*Redactor, string, []string) bool) string {
	var b strings.Builder
	last, pos := 0, 0
	var groups []string
	for pos <= len(s) {
		m := re.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			break
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += pos
			}
		}
		// The replaced part: the last group that took part in the match,
		// else the whole match.
		start, end := m[0], m[1]
		groups = groups[:0]
		for g := 2; g+1 < len(m); g += 2 {
			if m[g] < 0 {
				groups = append(groups, "")
				continue
			}
			groups = append(groups, s[m[g]:m[g+1]])
			start, end = m[g], m[g+1]
		}
		secret := s[start:end]
		if keep != nil && !keep(r, secret, groups) {
			pos = max(start, m[0]+1)
			continue
		}
		pos = max(m[1], m[0]+1)
		// A quoted value keeps its quotes.
		if len(secret) >= 2 && (secret[0] == '"' || secret[0] == '\'') && secret[len(secret)-1] == secret[0] {
			start, end = start+1, end-1
		}
		if start < last || start == end {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Placeholder)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactPairs replaces the value of every name=value and name: value pair
// whose name is secret-like (IsSecretName): "password=hunter2",
// "api_key: sk-…", `"token":"…"` inside a string, "?access_token=…&".
// It looks at each '=' and ':' once, reading the name back to the
// previous separator, so its cost is linear in s whatever s holds (a
// regular expression that must look at the name after matching a pair
// would search the rest of s again from every rejected pair).
func (r *Redactor) redactPairs(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		if c == ':' && strings.HasPrefix(s[i+1:], "//") {
			continue // a URL's scheme; its password is the URL rule's
		}
		j := i
		for j > last && (s[j-1] == ' ' || s[j-1] == '\t') {
			j--
		}
		if j > last && (s[j-1] == '"' || s[j-1] == '\'') {
			j--
		}
		end := j
		for j > last && isPairNameChar(s[j-1]) {
			j--
		}
		if j == end || !r.IsSecretName(s[j:end]) {
			continue
		}
		if j > 0 && (s[j-1] == '/' || s[j-1] == '\\') {
			// The last element of a path ("open /etc/passwd: sqlite: …"),
			// not a field's name: what follows is the error's own text.
			continue
		}
		k := i + 1
		if c == '=' && k < len(s) && s[k] == '>' {
			k++ // "name => value": a hash's arrow
		}
		start, stop := pairValue(s, k)
		if stop <= start {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Placeholder)
		last = stop
		i = stop - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// pairValue finds the value of a pair whose separator ends before k: a
// quoted string (without its quotes), an authorization scheme with its
// credentials, or a word up to white space or one of `"'&,;`.
func pairValue(s string, k int) (start, end int) {
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k >= len(s) {
		return k, k
	}
	if q := s[k]; q == '"' || q == '\'' {
		// A quote closes the value only where a value can end; else it
		// opens the next one (password=" pwd="x"), and the value is read
		// as a word.
		if n := strings.IndexByte(s[k+1:], q); n >= 0 && closesValue(s, k+2+n) {
			return k + 1, k + 1 + n
		}
		k++
	}
	end = wordEnd(s, k)
	if isAuthScheme(s[k:end]) {
		v := end
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		if v < len(s) && v > end {
			if e := wordEnd(s, v); e > v {
				end = e
			}
		}
	}
	return k, end
}

// closesValue reports whether a value may end just before s[k:].
func closesValue(s string, k int) bool {
	return k >= len(s) || strings.IndexByte(" \t\r\n,;&}])", s[k]) >= 0
}

func wordEnd(s string, k int) int {
	for k < len(s) && !strings.ContainsRune(" \t\r\n\"'&,;", rune(s[k])) {
		k++
	}
	return k
}

func isAuthScheme(w string) bool {
	for _, scheme := range []string{"bearer", "basic", "token", "digest"} {
		if strings.EqualFold(w, scheme) {
			return true
		}
	}
	return false
}

func isPairNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// secretWords are matched inside field names, case folded with '-', '_'
// and ' ' dropped (so "API-Key", "api_key" and "apiKey" all match).
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "accountkey",
	"authorization", "bearer", "cookie", "credential", "privatekey", "sessionkey", "signingkey",
}

// secretNameWords are secret only as a whole word of a name ("db_pass",
// "dbPass", "auth"), since as parts of words they are common ("passage",
// "author").
var secretNameWords = []string{"pass", "pwd", "auth", "dsn", "jwt"}

// IsSecretName reports whether a field with this name holds a secret.
func IsSecretName(name string) bool { return (*Redactor)(nil).IsSecretName(name) }

// IsSecretName reports whether a field with this name holds a secret: a
// built-in name or one of r.Names.
func (r *Redactor) IsSecretName(name string) bool {
	// Fold in a stack buffer: this runs for every field of every stored
	// argument object.
	var buf [64]byte
	n := fold(buf[:0], name)
	for _, w := range secretWords {
		if bytes.Contains(n, []byte(w)) {
			return true
		}
	}
	if hasNameWord(name) {
		return true
	}
	if r == nil {
		return false
	}
	for _, p := range r.Names {
		var pb [64]byte
		if ok, err := path.Match(string(fold(pb[:0], p)), string(n)); ok && err == nil {
			return true
		}
	}
	return false
}

// fold appends name to dst in lower case without separators.
func fold[T string | []byte](dst []byte, name T) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '-' || c == '_' || c == ' ':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// hasNameWord reports whether one word of name is in secretNameWords.
// Words are split at separators and at case changes: "dbPass",
// "DBPass" and "db-pass" are each "db" and "pass".
func hasNameWord(name string) bool {
	start := 0
	for i := 0; i <= len(name); i++ {
		boundary := i == len(name) || isSeparator(name[i])
		camel := !boundary && i > start && isUpper(name[i]) &&
			(isLower(name[i-1]) || (i+1 < len(name) && isLower(name[i+1]) && isUpper(name[i-1])))
		if !boundary && !camel {
			continue
		}
		if i > start && isNameWord(name[start:i]) {
			return true
		}
		start = i
		if boundary {
			start = i + 1
		}
	}
	return false
}

func isNameWord(w string) bool {
	for _, s := range secretNameWords {
		if strings.EqualFold(w, s) {
			return true
		}
	}
	return false
}

func isSeparator(c byte) bool { return c == '-' || c == '_' || c == ' ' || c == '.' }
func isUpper(c byte) bool     { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool     { return 'a' <= c && c <= 'z' }

// maySpellSecret reports whether the built-in rules could find anything in
// doc: a secret name (read the way IsSecretName reads names) or a value
// rule's trigger. It looks at names and values alike, so it errs only
// towards the full check; an escape ("\u0074oken") always takes it.
func maySpellSecret(doc []byte) bool {
	if bytes.IndexByte(doc, '\\') >= 0 {
		return true
	}
	var fbuf, lbuf [512]byte
	if nameWords.in(fold(fbuf[:0], doc)) {
		return true
	}
	lower := append(lbuf[:0], doc...)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	if triggerWords.in(lower) {
		return true
	}
	return fieldRules().MayHold(string(lower))
}

// nameWords and triggerWords are what maySpellSecret looks for: the
// secret name words in the folded document, the value rules' triggers in
// the lower-case one.
var (
	nameWords    = newWordSet(secretWords, secretNameWords)
	triggerWords = newWordSet(ruleTriggers())
)

func ruleTriggers() []string {
	var out []string
	for _, r := range valueRules {
		out = append(out, r.triggers...)
	}
	return out
}

// wordSet tells whether any of its words occurs in a text, in one pass
// over the text: at each byte it compares only the words that begin with
// that byte, where a search per word would pass over the text once for
// each (maySpellSecret runs on every argument and result stored, and an
// export runs it on every record).
type wordSet [256][]string

func newWordSet(lists ...[]string) *wordSet {
	var s wordSet
	for _, l := range lists {
		for _, w := range l {
			if w != "" {
				s[w[0]] = append(s[w[0]], w)
			}
		}
	}
	return &s
}

// in reports whether one of s's words is a substring of text.
func (s *wordSet) in(text []byte) bool {
	for i, c := range text {
		for _, w := range s[c] {
			if len(text)-i >= len(w) && string(text[i:i+len(w)]) == w {
				return true
			}
		}
	}
	return false
}

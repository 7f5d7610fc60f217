package redact

import "regexp"

// legacyShapes is the hand-written table of API key shapes that gitleaks'
// rules replaced, kept for the benchmark that compares the two.
var legacyShapes = valueRule{
	name:     "api key",
	triggers: []string{"sk-", "sk_", "rk-", "rk_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "xapp-", "akia", "asia", "abia", "acca", "aiza", "npm_", "hf_", "pypi-", "sg.", "hooks.slack.com"},
	re: regexp.MustCompile(`\b(?:` +
		`(?:sk|rk)[-_][A-Za-z0-9_-]{16,}` +
		`|whsec_[A-Za-z0-9+/=]{20,}` +
		`|gh[pousr]_[A-Za-z0-9]{30,}` +
		`|github_pat_[A-Za-z0-9_]{30,}` +
		`|glpat-[A-Za-z0-9_-]{20,}` +
		`|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}` +
		`|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}` +
		`|AIza[0-9A-Za-z_-]{35}` +
		`|npm_[A-Za-z0-9]{36}` +
		`|hf_[A-Za-z0-9]{30,}` +
		`|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}` +
		`|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}` +
		`)|hooks\.slack\.com/services/([A-Za-z0-9/]+)`),
}

// legacyRules are the value rules before gitleaks' table: the project's
// own with the old API key table in place of the trimmed one.
func legacyRules() []valueRule {
	rules := append([]valueRule(nil), valueRules...)
	rules[len(rules)-1] = legacyShapes
	return rules
}

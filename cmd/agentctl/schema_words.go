package main

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// schemaWords rewrites a JSON Schema validator's refusal (google's
// jsonschema-go, under go-sdk servers: "validating root: validating
// /properties/amount: minimum: -5/1 is less than 1.000000") into words a
// person reads ("amount must be at least 1; got -5"). Text it does not
// recognise is returned as it was.
func schemaWords(msg string) string {
	loc := schemaRefusal.FindStringSubmatchIndex(msg)
	if loc == nil {
		return msg
	}
	head, rule, name := msg[:loc[0]], msg[loc[4]:], "the arguments"
	if loc[2] >= 0 {
		name = argumentName(msg[loc[2]:loc[3]])
	}
	for _, r := range schemaRules {
		if m := r.re.FindStringSubmatch(rule); m != nil {
			return head + r.words(name, m)
		}
	}
	return msg
}

// schemaRefusal finds the validator's text: its "validating root:" chain,
// the innermost property path and the rule that failed.
var schemaRefusal = regexp.MustCompile(`validating root: (?:(?:validating [^:]*: )*validating (/[^:]*): )?()`)

// argumentName turns a schema path (/properties/payment/properties/amount)
// into the argument's name (payment.amount).
func argumentName(path string) string {
	var parts []string
	for _, p := range strings.Split(strings.Trim(path, "/"), "/") {
		if p != "properties" && p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "the arguments"
	}
	return strings.Join(parts, ".")
}

// number prints a validator's number (a big.Rat "-5/1" or a float
// "1.000000") the way it was typed.
func number(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

var schemaRules = []struct {
	re    *regexp.Regexp
	words func(name string, m []string) string
}{
	{regexp.MustCompile(`^minimum: (\S+) is less than (\S+)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be at least %s; got %s", n, number(m[2]), number(m[1]))
	}},
	{regexp.MustCompile(`^maximum: (\S+) is greater than (\S+)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be at most %s; got %s", n, number(m[2]), number(m[1]))
	}},
	{regexp.MustCompile(`^exclusiveMinimum: (\S+) is less than or equal to (\S+)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be more than %s; got %s", n, number(m[2]), number(m[1]))
	}},
	{regexp.MustCompile(`^exclusiveMaximum: (\S+) is greater than or equal to (\S+)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be less than %s; got %s", n, number(m[2]), number(m[1]))
	}},
	{regexp.MustCompile(`^multipleOf: (\S+) is not a multiple of (\S+)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be a multiple of %s; got %s", n, number(m[2]), number(m[1]))
	}},
	{regexp.MustCompile(`^type: (.*) has type "(\w+)", want "(\w+)"`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be %s %s; got %s (%s)", n, article(m[3]), m[3], m[1], m[2])
	}},
	{regexp.MustCompile(`^type: (.*) has type "(\w+)", want one of (.*)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be one of the types %s; got %s (%s)", n, m[3], m[1], m[2])
	}},
	{regexp.MustCompile(`^required: missing properties: \[(.*)\]`), func(n string, m []string) string {
		missing := strings.Fields(strings.ReplaceAll(m[1], `"`, ""))
		what := "argument"
		if len(missing) > 1 {
			what = "arguments"
		}
		in := ""
		if n != "the arguments" {
			in = " in " + n
		}
		return fmt.Sprintf("missing the required %s %s%s", what, strings.Join(missing, ", "), in)
	}},
	{regexp.MustCompile(`^minLength: (".*") contains (\d+) Unicode code points, fewer than (\d+)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be at least %s characters long; got %s (%s)", n, m[3], m[1], m[2])
	}},
	{regexp.MustCompile(`^maxLength: ".*" contains (\d+) Unicode code points, more than (\d+)`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be at most %s characters long; got %s", n, m[2], m[1])
	}},
	{regexp.MustCompile(`^enum: (.*) does not equal any of: \[(.*)\]`), func(n string, m []string) string {
		return fmt.Sprintf("%s must be one of %s; got %s", n, strings.Join(strings.Fields(m[2]), ", "), m[1])
	}},
	{regexp.MustCompile(`^pattern: (".*") does not match regular expression (".*")`), func(n string, m []string) string {
		return fmt.Sprintf("%s must match the pattern %s; got %s", n, m[2], m[1])
	}},
	{regexp.MustCompile(`^unexpected additional properties \[(.*)\]`), func(n string, m []string) string {
		return fmt.Sprintf("%s do not take %s", n, strings.Join(strings.Fields(strings.ReplaceAll(m[1], `"`, "")), ", "))
	}},
}

func article(typ string) string {
	if strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an"
	}
	return "a"
}

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/confirm"
)

// readmeSection returns the README's section under heading, up to the next
// heading of the same level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no section %q", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// The README's policy file reference names every field the loader accepts
// (asked of the loader itself: an unknown field's error lists the fields
// it knows), and its example is a policy the loader reads.
func TestREADMEPolicyReference(t *testing.T) {
	ref := readmeSection(t, "## The policy file")
	known := regexp.MustCompile(`\(want one of ([^)]*)\)`)
	fieldsOf := func(doc string) []string {
		t.Helper()
		_, err := confirm.Parse([]byte(doc))
		if err == nil {
			t.Fatalf("Parse(%s) accepted an unknown field", doc)
		}
		m := known.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("Parse(%s) = %v; want the fields it knows", doc, err)
		}
		return strings.Split(m[1], ", ")
	}
	var all []string
	for _, doc := range []string{
		`{"no_such_field": 1}`,
		`{"rules": [{"tool": "x", "action": "allow", "no_such_field": 1}]}`,
		`{"rules": [{"tool": "x", "action": "allow", "when": {"no_such_field": true}}]}`,
	} {
		all = append(all, fieldsOf(doc)...)
	}
	if len(all) < 18 {
		t.Fatalf("the loader knows %d fields (%v); want the policy's, the rule's and the conditions'", len(all), all)
	}
	for _, f := range all {
		if !strings.Contains(ref, "`"+f+"`") {
			t.Errorf("the README's policy file reference does not name the field %q", f)
		}
	}
	example := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(ref)
	if example == nil {
		t.Fatal("the policy file reference has no JSON example")
	}
	if _, err := confirm.Parse([]byte(example[1])); err != nil {
		t.Errorf("the README's example policy does not load: %v", err)
	}
	for _, v := range []string{"allow", "ask", "queue", "deny", "reject"} {
		if !strings.Contains(ref, `"`+v+`"`) {
			t.Errorf("the reference does not name the value %q", v)
		}
	}
}

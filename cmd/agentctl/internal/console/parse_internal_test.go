package console

import "testing"

func TestTemplatesParse(t *testing.T) {
	c := &Console{}
	if err := c.parse(); err != nil {
		t.Fatalf("parse() = %v", err)
	}
	for _, page := range []string{"records", "record", "approvals", "unknown", "stats", "error"} {
		if c.pages[page] == nil {
			t.Errorf("page %s not parsed", page)
		}
	}
}

package main

import (
	"slices"
	"testing"
)

func TestSpliceReplacesTheSectionOnly(t *testing.T) {
	const section = sectionHead + "\n\nnew\n"
	for _, c := range []struct{ name, doc, want string }{
		{"empty", "", section},
		{"absent", "# B\n\n## Other\n\nkept\n", "# B\n\n## Other\n\nkept\n\n" + section},
		{"last", "# B\n\n" + sectionHead + "\n\nold\n", "# B\n\n" + section},
		{"between", "# B\n\n" + sectionHead + "\n\nold\n### sub\nold too\n\n## After\n\nkept\n",
			"# B\n\n" + section + "\n## After\n\nkept\n"},
		{"heading only as a whole line", "# B\n\nsee " + sectionHead + " below\n", "# B\n\nsee " + sectionHead + " below\n\n" + section},
	} {
		if got := splice(c.doc, section); got != c.want {
			t.Errorf("%s: splice gave\n%q\nwant\n%q", c.name, got, c.want)
		}
	}
}

func TestFlags(t *testing.T) {
	got, err := parseSizes("1000000, 10000,10000")
	if err != nil || !slices.Equal(got, []int{10000, 1000000}) {
		t.Errorf("parseSizes: %v, %v; want [10000 1000000]", got, err)
	}
	for _, bad := range []string{"", "10k", "999"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted it", bad)
		}
	}
	if _, err := parseStores("sqlite,mysql"); err == nil {
		t.Error("parseStores accepted mysql")
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10000000: "10,000,000", -1234: "-1,234"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

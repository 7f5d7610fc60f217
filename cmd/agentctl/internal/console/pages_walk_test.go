package console_test

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
)

var (
	rowRE  = regexp.MustCompile(`<tr data-id="([^"]+)"`)
	nextRE = regexp.MustCompile(`id="next" href="([^"]+)"`)
)

// walk follows a list page's Next links from path and returns how many
// times each row was shown; before each next page it calls between.
func (r *rig) walk(t *testing.T, path string, between func(page int)) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("more than 1000 pages from %s: the cursor does not advance", path)
		}
		body := r.page(t, path)
		if len(body) > 100<<10 {
			t.Errorf("GET %s is %d bytes; want at most 100 KB", path, len(body))
		}
		rows := rowRE.FindAllStringSubmatch(body, -1)
		if len(rows) > 50 {
			t.Errorf("GET %s lists %d records; want at most 50", path, len(rows))
		}
		for _, m := range rows {
			seen[m[1]]++
		}
		m := nextRE.FindStringSubmatch(body)
		if m == nil {
			return seen
		}
		if page > 0 && !strings.Contains(body, `id="first"`) {
			t.Errorf("GET %s links no first page", path)
		}
		between(page)
		path = html.UnescapeString(m[1])
	}
}

// The UNKNOWN list and the records page of a ledger of a thousand
// UNKNOWN records come a page of at most 50 at a time, each under 100 KB,
// and their Next links walk every record once while records are added;
// the count says "more than 99" instead of counting them all.
func TestPagesWalkEveryRecordOnce(t *testing.T) {
	r := newRig(t)
	const n = 1000
	for i := 0; i < n; i++ {
		r.unknownIn(t, "client", fmt.Sprintf("u-%04d", i))
	}
	for w, path := range []string{"/unknown", "/?state=unknown", "/"} {
		t.Run(path, func(t *testing.T) {
			seen := r.walk(t, path, func(page int) { r.unknownIn(t, "client", fmt.Sprintf("new-%d-%03d", w, page)) })
			for i := 0; i < n; i++ {
				if id := fmt.Sprintf("default/client/refund/u-%04d", i); seen[id] != 1 {
					t.Errorf("%s showed %s %d times; want once", path, id, seen[id])
				}
			}
			for id, times := range seen {
				if times != 1 || !strings.HasPrefix(id, "default/client/refund/") {
					t.Errorf("%s showed %s %d times; want once", path, id, times)
				}
			}
		})
	}
	if body := r.page(t, "/unknown"); !strings.Contains(body, `id="unknown-count">more than 99<`) {
		t.Errorf("the UNKNOWN count does not say more than 99 of %d records", n)
	}
	if code, _ := r.fetch(t, "/unknown?cursor=not-a-cursor"); code != 400 {
		t.Errorf("GET /unknown?cursor=not-a-cursor = %d; want 400", code)
	}
}

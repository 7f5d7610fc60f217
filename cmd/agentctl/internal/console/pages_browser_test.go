package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// In a browser, the UNKNOWN list of 120 records shows 50, then 50, then
// 20 through its Next link, and the First page link leads back.
func TestUnknownPagesInBrowser(t *testing.T) {
	r := newRig(t)
	ctx := browser(t)
	for i := 0; i < 120; i++ {
		r.unknownIn(t, "client", fmt.Sprintf("u-%03d", i))
	}
	run(t, ctx, "open the UNKNOWN list", chromedp.Navigate(r.web.URL+"/unknown?token="+r.con.Token()), chromedp.WaitVisible(css(`#unknown`)))
	seen := map[string]bool{}
	for page, want := range []int{50, 50, 20} {
		if n := rows(t, ctx, `#unknown tr[data-id]`); n != want {
			t.Fatalf("page %d shows %d rows; want %d", page+1, n, want)
		}
		ids, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#unknown tr[data-id]")).map(function (tr) { return tr.getAttribute("data-id"); }).join(" ")`))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range strings.Fields(ids) {
			if seen[id] {
				t.Errorf("page %d shows %s again", page+1, id)
			}
			seen[id] = true
		}
		if page < 2 {
			submit(t, ctx, fmt.Sprintf("page %d: next", page+1), `#next`)
		}
	}
	if len(seen) != 120 {
		t.Errorf("the pages showed %d records; want 120", len(seen))
	}
	if rows(t, ctx, `#next`) != 0 {
		t.Errorf("the last page links a next page")
	}
	submit(t, ctx, "first page", `#first`)
	if n := rows(t, ctx, `#unknown tr[data-id]`); n != 50 || rows(t, ctx, `#first`) != 0 {
		t.Errorf("the first page shows %d rows and %d first links; want 50 and none", n, rows(t, ctx, `#first`))
	}
}

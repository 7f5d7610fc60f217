package console

import (
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// statsView is the stats page: the figures of ledger stats and their charts.
type statsView struct {
	// Range is the charts' range (chartRanges), Ranges the ones offered.
	Range  string
	Ranges []string
	Since  string
	Stats  ledger.Stats
	Counts template.HTML // inline SVG
	Rates  template.HTML
	Replay template.HTML
	None   bool
}

func (c *Console) stats(w http.ResponseWriter, r *http.Request) {
	tenant := c.tenant(r)
	since := r.URL.Query().Get("since")
	if since == "" {
		since = "24h"
	}
	d, err := parsePeriod(since)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	sv := &statsView{Since: since, Range: r.URL.Query().Get("range")}
	if _, ok := rangeNamed(sv.Range); !ok {
		sv.Range = "24h"
	}
	for _, cr := range chartRanges {
		sv.Ranges = append(sv.Ranges, cr.Name)
	}
	el, ok := c.opts.Store.(ledger.EventLog)
	if !ok {
		sv.None = true
		c.render(w, r, "stats", http.StatusOK, &view{Title: "Stats", Nav: "stats", Tenant: tenant, Stats: sv})
		return
	}
	st, err := el.Stats(r.Context(), ledger.StatsQuery{Tenant: tenant, Since: c.opts.Now().Add(-d)})
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "cannot read the ledger's events: %v; check that it is reachable and reload", err)
		return
	}
	sv.Stats = st
	sv.Counts = bars("calls and outcomes", []bar{
		{"calls", float64(st.Calls), fmt.Sprint(st.Calls)},
		{"duplicate hits", float64(st.DuplicateHits), fmt.Sprint(st.DuplicateHits)},
		{"key conflicts", float64(st.KeyConflicts), fmt.Sprint(st.KeyConflicts)},
		{"in-progress waits", float64(st.InProgressWaits), fmt.Sprint(st.InProgressWaits)},
		{"in-progress timeouts", float64(st.InProgressTimeouts), fmt.Sprint(st.InProgressTimeouts)},
		{"UNKNOWN records", float64(st.Unknown), fmt.Sprint(st.Unknown)},
		{"downstream duplicates", float64(st.DownstreamDuplicates), fmt.Sprint(st.DownstreamDuplicates)},
	}, 0)
	sv.Rates = bars("rates per call", []bar{
		{"duplicate hit rate", st.DuplicateHitRate(), fmt.Sprintf("%.1f%%", 100*st.DuplicateHitRate())},
		{"key conflict rate", st.KeyConflictRate(), fmt.Sprintf("%.1f%%", 100*st.KeyConflictRate())},
	}, 1)
	sv.Replay = bars("replay latency", []bar{
		{"p50", st.ReplayP50.Seconds(), latencyOr(st.ReplayP50, st.DuplicateHits)},
		{"p99", st.ReplayP99.Seconds(), latencyOr(st.ReplayP99, st.DuplicateHits)},
	}, 0)
	c.render(w, r, "stats", http.StatusOK, &view{Title: "Stats", Nav: "stats", Tenant: tenant, Stats: sv})
}

func latencyOr(d time.Duration, replays int64) string {
	if replays == 0 {
		return "-"
	}
	return latency(d)
}

type bar struct {
	label string
	value float64
	text  string
}

// bars draws a horizontal bar chart as inline SVG; scale is the value of a
// full bar (the largest value when zero).
func bars(title string, bs []bar, scale float64) template.HTML {
	const (
		labelW, barW, rowH, textW = 170, 300, 24, 90
	)
	if scale <= 0 {
		for _, b := range bs {
			scale = max(scale, b.value)
		}
	}
	var s strings.Builder
	h := rowH*len(bs) + 8
	fmt.Fprintf(&s, `<svg class="chart" role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d">`,
		template.HTMLEscapeString(title), labelW+barW+textW, h, labelW+barW+textW, h)
	for i, b := range bs {
		y := 4 + i*rowH
		w := 0.0
		if scale > 0 {
			w = barW * b.value / scale
		}
		fmt.Fprintf(&s, `<text x="0" y="%d" class="label">%s</text>`, y+16, template.HTMLEscapeString(b.label))
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%d" height="%d" class="track"/>`, labelW, y+2, barW, rowH-6)
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%.1f" height="%d" class="bar"/>`, labelW, y+2, w, rowH-6)
		fmt.Fprintf(&s, `<text x="%d" y="%d" class="value">%s</text>`, labelW+barW+8, y+16, template.HTMLEscapeString(b.text))
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String()) // every piece of text above is escaped
}

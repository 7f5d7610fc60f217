package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// liveRecord is one new record sent to the records page.
type liveRecord struct {
	// ID is the row's data-id (rowID): tenant/layer/tool/key.
	ID       string `json:"id"`
	Tenant   string `json:"tenant"`
	Layer    string `json:"layer"`
	Tool     string `json:"tool"`
	Key      string `json:"key"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	Session  string `json:"session"`
	Created  string `json:"created"`
	Link     string `json:"link"`
}

// events streams the records that appear or change after the page was
// served, as server-sent events, for the page's filter (its layer
// included). It looks at the
// newest page of the ledger every Poll: a store says nothing when a record
// changes, and a page of a console needs no faster news.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	f, _, err := c.filter(r)
	if err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusBadRequest)
		return
	}
	f.Cursor, f.Limit = "", 100
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "console: this server cannot stream events", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// after is when the page was rendered: what changed later is news to
	// it. Without it, the first look only learns what there is.
	var after time.Time
	if v := r.URL.Query().Get("after"); v != "" {
		if at, err := time.Parse(time.RFC3339Nano, v); err == nil {
			after = at
		}
	}
	seen := map[ledger.ID]time.Time{} // a record's UpdatedAt as last sent (or skipped)
	if _, err := fmt.Fprint(w, ": live\n\n"); err != nil {
		return
	}
	flusher.Flush()
	tick := time.NewTicker(c.opts.Poll)
	defer tick.Stop()
	for first := true; ; first = false {
		if !c.sendNew(w, r, f, seen, first, after) {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// sendNew writes an event for every record of f's newest page that is new
// or changed since it was seen. On the first look only records updated
// after the page was rendered are news. It reports false when the client
// is gone.
func (c *Console) sendNew(w http.ResponseWriter, r *http.Request, f ledger.Filter, seen map[ledger.ID]time.Time, first bool, after time.Time) bool {
	page, err := c.opts.Store.List(r.Context(), f)
	if err != nil {
		b, jerr := json.Marshal("cannot read the ledger: " + err.Error())
		if jerr != nil {
			return false
		}
		_, werr := fmt.Fprintf(w, "event: problem\ndata: %s\n\n", b)
		return werr == nil
	}
	// Oldest first, so the page prepends them in order.
	for i := len(page.Records) - 1; i >= 0; i-- {
		rec := page.Records[i]
		if at, ok := seen[rec.ID]; ok && !rec.UpdatedAt.After(at) {
			continue
		}
		seen[rec.ID] = rec.UpdatedAt
		if first && (after.IsZero() || !rec.UpdatedAt.After(after)) {
			continue
		}
		b, err := json.Marshal(liveRecord{
			ID: rowID(rec.ID), Tenant: rec.Tenant, Layer: rec.Layer, Tool: rec.Tool, Key: rec.Key, State: string(rec.State), Attempts: rec.Attempts,
			Session: rec.Session, Created: stamp(rec.CreatedAt), Link: string(recordLink(rec.ID)),
		})
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: record\ndata: %s\n\n", b); err != nil {
			return false
		}
	}
	return true
}

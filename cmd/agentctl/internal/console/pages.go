package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/cmd/agentctl/internal/period"
	"github.com/mcpledger/mcpledger/internal/audit"
	"github.com/mcpledger/mcpledger/ledger"
)

// view is what every page template gets.
type view struct {
	Title     string
	Nav       string
	Tenant    string
	CSRF      string
	Filter    filterView
	Records   []*ledger.Record
	Next      template.URL // query of the next page; "" on the last
	First     template.URL // query of the first page; "" on the first
	Record    *ledger.Record
	Meaning   string // what the record's state means (ledger.Meaning)
	Timeline  []audit.Entry
	Arguments string
	Result    string
	Stats     *statsView
	Message   string
	States    []ledger.State
	Layers    []string // the layer filter's choices
	Pending   count
	Unknown   count
	Now       string // when the page was rendered (RFC 3339), for live updates
}

type filterView struct {
	State, Layer, Tool, Session, Tenant, Since string
	Limit                                      int
}

// layers are the layers the filter offers; the ledger accepts others.
var layers = []string{ledger.LayerClient, ledger.LayerProxy, ledger.LayerServer}

// OtherLayer reports a layer in the filter that is none of the offered
// ones, so the select can show it as chosen.
func (fv filterView) OtherLayer() bool {
	if fv.Layer == "" {
		return false
	}
	for _, l := range layers {
		if fv.Layer == l {
			return false
		}
	}
	return true
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, page string, status int, v *view) {
	v.CSRF, v.States, v.Layers, v.Now = c.csrf, ledger.States, layers, c.opts.Now().UTC().Format(time.RFC3339Nano)
	if v.Tenant == "" {
		v.Tenant = c.tenant(r)
	}
	v.Pending, v.Unknown = c.count(r.Context(), v.Tenant, ledger.StatePendingApproval), c.count(r.Context(), v.Tenant, ledger.StateUnknown)
	var buf bytes.Buffer
	if err := c.pages[page].Execute(&buf, v); err != nil {
		http.Error(w, "console: render "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if _, err := buf.WriteTo(w); err != nil {
		return // the browser went away
	}
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, format string, args ...any) {
	c.render(w, r, "error", status, &view{Title: "Error", Message: fmt.Sprintf(format, args...)})
}

// countCap is the most records a count reads: past it a page says "more
// than 99", so no page counts a million rows.
const countCap = 99

// count is a number of records, up to countCap+1, which reads as "more
// than countCap".
type count int

func (n count) String() string {
	if n > countCap {
		return "more than " + strconv.Itoa(countCap)
	}
	return strconv.Itoa(int(n))
}

// count is how many records of tenant are in state, up to countCap+1: one
// page of the state's index.
func (c *Console) count(ctx context.Context, tenant string, s ledger.State) count {
	p, err := c.opts.Store.List(ctx, ledger.Filter{Tenant: tenant, State: s, Limit: countCap + 1})
	if err != nil {
		return 0
	}
	return count(len(p.Records))
}

// pageSize is how many records a console page lists: at 50, a page of
// records with long error messages stays far under 100 KB.
const pageSize = ledger.DefaultPageSize

// tenant is the tenant a page shows: the query's (ServeHTTP let only the
// approver's tenants through), else the console's when the approver may
// see it, else the approver's first.
func (c *Console) tenant(r *http.Request) string {
	if t := r.URL.Query().Get("tenant"); t != "" {
		return t
	}
	if a := approver(r); !a.allows(c.opts.Tenant) && len(a.Tenants) > 0 {
		return a.Tenants[0]
	}
	return c.opts.Tenant
}

// filter reads the records filter from the query.
func (c *Console) filter(r *http.Request) (ledger.Filter, filterView, error) {
	q := r.URL.Query()
	fv := filterView{State: strings.ToLower(q.Get("state")), Layer: q.Get("layer"), Tool: q.Get("tool"), Session: q.Get("session"), Tenant: c.tenant(r), Since: q.Get("since")}
	f := ledger.Filter{Tenant: fv.Tenant, Layer: fv.Layer, Tool: fv.Tool, Session: fv.Session, Cursor: q.Get("cursor"), Limit: pageSize}
	if err := ledger.ValidateTenant(f.Tenant); err != nil {
		return f, fv, fmt.Errorf("tenant %q: %v", f.Tenant, err)
	}
	if err := layerOK(f.Layer); err != nil {
		return f, fv, err
	}
	if fv.State != "" {
		s, err := ledger.ParseState(fv.State)
		if err != nil {
			return f, fv, fmt.Errorf("state %q: want one of %v", fv.State, ledger.States)
		}
		f.State = s
	}
	if fv.Since != "" {
		d, err := parsePeriod(fv.Since)
		if err != nil {
			return f, fv, err
		}
		f.Since = c.opts.Now().Add(-d)
	}
	fv.Limit = f.Limit
	return f, fv, nil
}

func (c *Console) records(w http.ResponseWriter, r *http.Request) {
	f, fv, err := c.filter(r)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "%v; fix the filter and apply it again", err)
		return
	}
	page, err := c.opts.Store.List(r.Context(), f)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "cannot read the ledger: %v; check that it is reachable and reload", err)
		return
	}
	v := &view{Title: "Records", Nav: "records", Tenant: f.Tenant, Filter: fv, Records: shown(page.Records...)}
	v.Next, v.First = nextQuery(r, f.Tenant, page.Next)
	c.render(w, r, "records", http.StatusOK, v)
}

// layerOK checks a layer from a query or a form; the error says what to
// send instead.
func layerOK(layer string) error {
	if err := ledger.ValidateLayer(layer); err != nil {
		return fmt.Errorf("layer %q: %v; want %s, or none for a ledger without layers", layer, err, strings.Join(layers, ", "))
	}
	return nil
}

// checkID validates an identity from a query or a form, naming the field
// at fault.
func checkID(id ledger.ID) error {
	if err := ledger.ValidateTenant(id.Tenant); err != nil {
		return fmt.Errorf("tenant %q: %v", id.Tenant, err)
	}
	if err := layerOK(id.Layer); err != nil {
		return err
	}
	return id.Validate()
}

// inLayer is how messages name a record's layer.
func inLayer(layer string) string {
	if layer == "" {
		return "no layer"
	}
	return "layer " + layer
}

func (c *Console) lookup(w http.ResponseWriter, r *http.Request, tenant, layer, tool, key string) (*ledger.Record, bool) {
	id := ledger.ID{Tenant: tenant, Layer: layer, Tool: tool, Key: key}
	if err := checkID(id); err != nil {
		c.fail(w, r, http.StatusBadRequest, "%v; follow a link from the records page", err)
		return nil, false
	}
	rec, err := c.opts.Store.Get(r.Context(), id)
	if errors.Is(err, ledger.ErrNotFound) {
		c.notFound(w, r, id)
		return nil, false
	}
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "cannot read the ledger: %v; check that it is reachable and reload", err)
		return nil, false
	}
	return rec, true
}

// notFound answers 404 for a record that is not in the tenant asked for
// (another tenant's key is not there either, and a page never says whether
// it exists elsewhere), naming the layers of the tenant where the key has
// a record, if any.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request, id ledger.ID) {
	if others := c.otherLayers(r.Context(), id); len(others) > 0 {
		c.fail(w, r, http.StatusNotFound, "no record %s of tool %s in %s of tenant %s, but the key has a record in %s; follow a link from the records page: it names the layer",
			id.Key, id.Tool, inLayer(id.Layer), id.Tenant, strings.Join(others, " and "))
		return
	}
	c.fail(w, r, http.StatusNotFound, "no record %s of tool %s in %s of tenant %s; it may have been purged, or the key is mistyped: follow a link from the records page", id.Key, id.Tool, inLayer(id.Layer), id.Tenant)
}

// otherLayers names the offered layers, other than id's, in which id's
// key has a record: for the message of a link without its layer.
func (c *Console) otherLayers(ctx context.Context, id ledger.ID) []string {
	var found []string
	for _, l := range append([]string{""}, layers...) {
		if l == id.Layer {
			continue
		}
		o := id
		o.Layer = l
		if _, err := c.opts.Store.Get(ctx, o); err == nil {
			found = append(found, inLayer(l))
		}
	}
	return found
}

func (c *Console) record(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rec, ok := c.lookup(w, r, c.tenant(r), q.Get("layer"), q.Get("tool"), q.Get("key"))
	if !ok {
		return
	}
	shown(rec)
	v := &view{Title: rec.Tool + " " + rec.Key, Nav: "records", Tenant: rec.Tenant, Record: rec, Meaning: ledger.Meaning(rec), Timeline: audit.Timeline(rec)}
	v.Arguments = arguments(rec.Arguments)
	v.Result = resultText(rec.Result)
	c.render(w, r, "record", http.StatusOK, v)
}

func (c *Console) approvals(w http.ResponseWriter, r *http.Request) {
	c.stateList(w, r, ledger.StatePendingApproval, "approvals", "Approvals")
}

func (c *Console) unknown(w http.ResponseWriter, r *http.Request) {
	c.stateList(w, r, ledger.StateUnknown, "unknown", "Unknown outcomes")
}

func (c *Console) stateList(w http.ResponseWriter, r *http.Request, s ledger.State, page, title string) {
	tenant := c.tenant(r)
	if err := ledger.ValidateTenant(tenant); err != nil {
		c.fail(w, r, http.StatusBadRequest, "tenant %q: %v", tenant, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	if cursor != "" {
		if _, err := ledger.DecodeCursor(cursor); err != nil {
			c.fail(w, r, http.StatusBadRequest, "%v; follow the page links, or start from the first page", err)
			return
		}
	}
	p, err := c.opts.Store.List(r.Context(), ledger.Filter{Tenant: tenant, State: s, Limit: pageSize, Cursor: cursor})
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "cannot read the ledger: %v; check that it is reachable and reload", err)
		return
	}
	v := &view{Title: title, Nav: page, Tenant: tenant, Records: shown(p.Records...)}
	v.Next, v.First = nextQuery(r, tenant, p.Next)
	c.render(w, r, page, http.StatusOK, v)
}

// nextQuery is the query of the page after this one (cursor next, ""
// when there is none), and of the first page when this one is not it:
// a cursor only moves forward, and the first page is where newer records
// appear.
func nextQuery(r *http.Request, tenant, next string) (nextQ, first template.URL) {
	q := r.URL.Query()
	q.Set("tenant", tenant)
	if q.Get("cursor") != "" {
		q.Del("cursor")
		first = template.URL(q.Encode())
	}
	if next != "" {
		q.Set("cursor", next)
		nextQ = template.URL(q.Encode())
	}
	return nextQ, first
}

// decide serves the approve and deny forms.
func (c *Console) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := formID(r)
		if err := checkID(id); err != nil {
			c.fail(w, r, http.StatusBadRequest, "%v; use the buttons of the approvals page", err)
			return
		}
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		if !approve && reason == "" {
			c.fail(w, r, http.StatusBadRequest, "a denial needs a reason: the requester is told why; go back and fill it in")
			return
		}
		_, err := client.Decide(r.Context(), c.opts.Store, id, client.Decision{
			Approve: approve, ForSession: r.PostFormValue("session") == "1", By: approver(r).Name, Via: "console", Reason: reason,
			DistinctApprover: c.opts.Policy.DistinctApprover, PolicyVersion: c.opts.Policy.Version(), Now: c.opts.Now,
		})
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			c.notFound(w, r, id)
			return
		case errors.Is(err, client.ErrSameApprover):
			c.fail(w, r, http.StatusForbidden, "%v; the policy requires another person to approve it", err)
			return
		case errors.Is(err, client.ErrOtherPolicy):
			c.fail(w, r, http.StatusForbidden, "%v; only that policy says whether you may approve your own call: ask another person to approve it, or serve the console with that policy (agentctl ui --policy FILE)", err)
			return
		case errors.Is(err, client.ErrNotQueued), errors.Is(err, ledger.ErrLeaseLost), errors.Is(err, ledger.ErrStateChanged):
			c.fail(w, r, http.StatusConflict, "%v; it was decided, consumed or expired meanwhile: look at the record", err)
			return
		case err != nil:
			c.fail(w, r, http.StatusBadGateway, "cannot record the decision: %v; check that the ledger is reachable and submit again", err)
			return
		}
		http.Redirect(w, r, back(r, "/approvals"), http.StatusSeeOther)
	}
}

func (c *Console) reconcile(w http.ResponseWriter, r *http.Request) {
	id := formID(r)
	if err := checkID(id); err != nil {
		c.fail(w, r, http.StatusBadRequest, "%v; use the form of the unknown page", err)
		return
	}
	var to ledger.State
	switch r.PostFormValue("as") {
	case "succeeded":
		to = ledger.StateSucceeded
	case "failed":
		to = ledger.StateFailed
	case "not_run":
		to = ledger.StateRetryable
	default:
		c.fail(w, r, http.StatusBadRequest, "choose succeeded, failed or not run: what did the check at the server show?")
		return
	}
	before := c.unknownNow(r.Context(), id) // for the resolution metrics
	after, err := client.Reconcile(r.Context(), c.opts.Store, id, client.Reconciliation{As: to, By: approver(r).Name, Note: strings.TrimSpace(r.PostFormValue("note")), At: c.opts.Now()})
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		c.notFound(w, r, id)
		return
	case errors.Is(err, ledger.ErrStateChanged), errors.Is(err, ledger.ErrLeaseLost):
		c.fail(w, r, http.StatusConflict, "%v; someone settled it meanwhile: look at the record", err)
		return
	case err != nil:
		c.fail(w, r, http.StatusBadGateway, "cannot record the reconciliation: %v; check that the ledger is reachable and submit again", err)
		return
	}
	c.resolutions.Resolved(r.Context(), before, after, ledger.MethodPerson)
	http.Redirect(w, r, back(r, "/unknown"), http.StatusSeeOther)
}

// formID is the record a form names: its hidden tenant, layer, tool and
// key fields.
func formID(r *http.Request) ledger.ID {
	return ledger.ID{Tenant: r.PostFormValue("tenant"), Layer: r.PostFormValue("layer"), Tool: r.PostFormValue("tool"), Key: r.PostFormValue("key")}
}

// back is the form's return address: a path of this console only.
func back(r *http.Request, def string) string {
	b := r.PostFormValue("back")
	if b == "" || !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") {
		return def
	}
	return b
}

// query encodes name, value pairs (empty values left out) as the query of
// a link. Each value is escaped here, so the whole is safe in an href.
func query(kv ...string) template.URL {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return template.URL(q.Encode())
}

// recordLink is the address of a record's page, with its full identity.
func recordLink(id ledger.ID) template.URL {
	return "/record?" + query("tenant", id.Tenant, "layer", id.Layer, "tool", id.Tool, "key", id.Key)
}

// rowID identifies a record's row (data-id): tenant/layer/tool/key, the
// layer empty for a ledger without layers. No tenant, layer or key holds
// a "/", so two records never share one.
func rowID(id ledger.ID) string {
	return id.Tenant + "/" + id.Layer + "/" + id.Tool + "/" + id.Key
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// queuedInfo describes a PENDING_APPROVAL record for the approvals page.
func queuedInfo(r *ledger.Record) string {
	q, ok := client.QueuedCall(r)
	switch {
	case !ok:
		return "asking a person at the call (terminal or host)"
	case q.Approved && r.Approval != nil:
		return "approved by " + r.Approval.By + "; runs at the next call with its key"
	}
	return "requested by " + q.Requester + "; waits for a decision"
}

// shown readies records the store returned for a page: redacted as
// agentctl ledger show redacts them (ledger.RedactRecord), so a secret a
// tool echoed in its result, or one an older build let through in the
// arguments, never reaches the browser. Every page that shows a record's
// payload or error gets it through here.
func shown(recs ...*ledger.Record) []*ledger.Record {
	for _, r := range recs {
		ledger.RedactRecord(r)
	}
	return recs
}

// arguments are a record's arguments, redacted by shown, as readable JSON
// (see readable).
func arguments(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	return readable(raw)
}

// readable is JSON indented for a person, with the \uXXXX escapes of
// printable characters written as the characters: json.Marshal writes <,
// > and & as \u003c, \u003e and \u0026, which a person cannot read and
// html/template escapes anyway. Control characters and surrogates stay
// escaped; the order of keys is kept.
func readable(raw json.RawMessage) string {
	s := indent(raw)
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			in = !in
		case c == '\\' && in && i+1 < len(s):
			if s[i+1] == 'u' && i+6 <= len(s) {
				if n, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil && n >= 0x20 && n != '"' && n != '\\' && (n < 0xd800 || n > 0xdfff) {
					b.WriteRune(rune(n))
					i += 5
					continue
				}
			}
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func indent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// resultText is a record's result, redacted by shown, as a person reads
// it: its text items, else its JSON.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return string(raw)
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return readable(raw)
	}
	return strings.Join(parts, "\n")
}

// parsePeriod reads a Go duration or a whole number of days ("7d").
func parsePeriod(s string) (time.Duration, error) {
	d, err := period.Parse(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("since %q: want a positive period such as 90m, 24h or 7d", s)
	}
	return d, nil
}

func latency(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// Package console is the ledger's local web console (agentctl ui): the
// records with filters and paging, one record with its timeline, the
// approvals queue with approve and deny, UNKNOWN records with a reconcile
// form, the figures of ledger stats as small charts, and new records as
// they arrive (server-sent events). Pages are rendered on the server with
// html/template; a few lines of plain JavaScript add the live updates.
//
//	c, err := console.New(console.Options{Store: st, Tenant: "acme", Who: "ana"})
//	ln, err := net.Listen("tcp", "127.0.0.1:0")
//	fmt.Println(c.URL(ln.Addr()))
//	http.Serve(ln, c)
//
// The console serves loopback clients only and guards every request with
// an access token, passed once in the URL (as Jupyter does) and kept in a
// cookie after that; a request without a valid one gets 401. Each token is
// one approver's: it names the person whose decisions are recorded (the
// requester of a call can be told apart from its approver) and the tenants
// the person may see and decide for; a request for any other tenant, in a
// query or a form, gets 403. Writes are POST requests that must carry the
// page's CSRF token and, when the browser sends one, an Origin of the
// console itself.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

//go:embed web
var webFS embed.FS

// Options configure a Console.
type Options struct {
	// Store is the ledger (required).
	Store ledger.Store
	// Tenant is the tenant the console serves (to an approver without
	// Tenants of their own).
	Tenant string
	// Who names the one person using the console, on approvals and
	// reconciliations ("console" when empty), when Approvers is empty.
	Who string
	// Policy is the approvers' policy: with DistinctApprover the requester
	// cannot approve their own call here (confirm.Default() when nil).
	Policy *confirm.Policy
	// Token is the one person's access token (a random one when empty),
	// when Approvers is empty.
	Token string
	// Approvers, when set, are the people the console lets in, each with
	// a token of their own (Token and Who are then unused).
	Approvers []Approver
	// Reconcilers are the systems that may report outcomes to
	// POST /api/v1/reconcile (reconcile_api.go), each with a token of its
	// own; none when empty.
	Reconcilers []Reconciler
	// MeterProvider receives the resolution metrics
	// (otel.GetMeterProvider() when nil).
	MeterProvider metric.MeterProvider
	// Poll is how often live updates look for new records (1s when zero).
	Poll time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Approver is one person the console lets in: their own token, the name
// their decisions are recorded under, and the tenants whose records they
// may see and decide (Options.Tenant alone when empty).
type Approver struct {
	Token   string
	Name    string
	Tenants []string
}

// allows reports whether the approver may see tenant's records.
func (a *Approver) allows(tenant string) bool {
	for _, t := range a.Tenants {
		if t == tenant {
			return true
		}
	}
	return false
}

// Console is an http.Handler serving the web console.
type Console struct {
	opts      Options
	approvers []Approver // at least one
	shared    bool       // Approvers were given: the URL carries no token
	csrf      string
	pages     map[string]*template.Template
	mux       *http.ServeMux

	// reconcilers are Options.Reconcilers, checked (see reconcile_api.go).
	reconcilers []Reconciler
	resolutions *telemetry.Resolutions
}

type approverKey struct{}

// approver is the person a request was let in as.
func approver(r *http.Request) *Approver {
	a, _ := r.Context().Value(approverKey{}).(*Approver)
	if a == nil {
		return &Approver{Name: "console"}
	}
	return a
}

// New builds a console for opts.Store.
func New(opts Options) (*Console, error) {
	if opts.Store == nil {
		return nil, errors.New("console: a ledger store is required")
	}
	if err := ledger.ValidateTenant(opts.Tenant); err != nil {
		return nil, err
	}
	if opts.Who == "" {
		opts.Who = "console"
	}
	if opts.Policy == nil {
		opts.Policy = confirm.Default()
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Token == "" {
		opts.Token = randomToken()
	}
	approvers, err := checkApprovers(opts)
	if err != nil {
		return nil, err
	}
	reconcilers, err := checkReconcilers(opts, approvers)
	if err != nil {
		return nil, err
	}
	// A person reads records as they stand now: an approval whose expiry
	// passed is REJECTED on every page, and cannot be approved.
	opts.Store = ledger.AsReadStore(opts.Store, opts.Now)
	c := &Console{opts: opts, approvers: approvers, reconcilers: reconcilers, resolutions: telemetry.NewResolutions(opts.MeterProvider),
		shared: len(opts.Approvers) > 0, csrf: randomToken(), mux: http.NewServeMux()}
	if err := c.parse(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(webFS, "web/static")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /{$}", c.records)
	c.mux.HandleFunc("GET /record", c.record)
	c.mux.HandleFunc("GET /approvals", c.approvals)
	c.mux.HandleFunc("GET /unknown", c.unknown)
	c.mux.HandleFunc("GET /stats", c.stats)
	c.mux.HandleFunc("GET /stats/series", c.series)
	c.mux.HandleFunc("GET /events", c.events)
	c.mux.HandleFunc("POST /approve", c.decide(true))
	c.mux.HandleFunc("POST /deny", c.decide(false))
	c.mux.HandleFunc("POST /reconcile", c.reconcile)
	return c, nil
}

func (c *Console) parse() error {
	funcs := template.FuncMap{
		"stamp": stamp,
		"lower": func(s ledger.State) string { return strings.ToLower(string(s)) },
		"query": query,
		"link":  func(r *ledger.Record) template.URL { return recordLink(r.ID) },
		"standingLink": func(r *ledger.Record, s *ledger.Standing) template.URL {
			return recordLink(ledger.ID{Tenant: r.Tenant, Layer: s.Layer, Tool: s.Tool, Key: s.Key})
		},
		"rowid":      func(r *ledger.Record) string { return rowID(r.ID) },
		"percent":    func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"short":      func(s string, n int) string { return ledger.OneLine(s, n) },
		"seconds":    func(d time.Duration) string { return latency(d) },
		"queuedInfo": queuedInfo,
		"args":       func(raw json.RawMessage) string { return arguments(raw) },
		"form": func(csrf string, r *ledger.Record, back string) formView {
			return formView{CSRF: csrf, R: r, Back: back}
		},
	}
	for name, f := range c.reconcileFuncs() {
		funcs[name] = f
	}
	c.pages = map[string]*template.Template{}
	for _, page := range []string{"records", "record", "approvals", "unknown", "stats", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(webFS, "web/layout.html", "web/reconcile.html", "web/"+page+".html")
		if err != nil {
			return fmt.Errorf("console: template %s: %w", page, err)
		}
		c.pages[page] = t
	}
	return nil
}

// formView is what the approve, deny and reconcile forms get.
type formView struct {
	CSRF string
	R    *ledger.Record
	Back string // where the form returns to ("" for the record's page)
}

// checkApprovers returns the approvers of opts: Approvers, each with a
// token, a name and valid tenants, or the one person of Token and Who.
func checkApprovers(opts Options) ([]Approver, error) {
	if len(opts.Approvers) == 0 {
		return []Approver{{Token: opts.Token, Name: opts.Who, Tenants: []string{opts.Tenant}}}, nil
	}
	return checkTokens("approver", opts.Approvers, opts.Tenant, nil)
}

// checkTokens checks the named tokens of list (of what: "approver",
// "reconciler"): each with a token long enough, its own, and none of
// taken's; a name; and valid tenants (tenant when none are listed).
func checkTokens(what string, list []Approver, tenant string, taken []Approver) ([]Approver, error) {
	seen := map[string]bool{}
	for _, a := range taken {
		seen[a.Token] = true
	}
	out := make([]Approver, 0, len(list))
	for i, a := range list {
		switch {
		case len(a.Token) < minToken:
			return nil, fmt.Errorf("console: %s %d (%s): a token of %d characters is too easy to guess; give each %s a random token of at least %d", what, i+1, a.Name, len(a.Token), what, minToken)
		case strings.TrimSpace(a.Name) == "":
			return nil, fmt.Errorf("console: %s %d has no name; what it decides is recorded under it", what, i+1)
		case seen[a.Token]:
			return nil, fmt.Errorf("console: %s %d (%s) has a token already given (to another %s or an approver); give each their own", what, i+1, a.Name, what)
		}
		seen[a.Token] = true
		if len(a.Tenants) == 0 {
			a.Tenants = []string{tenant}
		}
		for _, t := range a.Tenants {
			if err := ledger.ValidateTenant(t); err != nil {
				return nil, fmt.Errorf("console: %s %d (%s): tenant %q: %w", what, i+1, a.Name, t, err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// minToken is the shortest approver token accepted.
const minToken = 16

// Token is the access token the console's URL carries: the one person's
// (the first approver's when Approvers were given).
func (c *Console) Token() string { return c.approvers[0].Token }

// URL is the address to open: the console at addr, with the one person's
// access token; without a token when Approvers were given (each approver
// adds their own: ?token=…).
func (c *Console) URL(addr net.Addr) string {
	if c.shared {
		return "http://" + addr.String() + "/"
	}
	return "http://" + addr.String() + "/?token=" + url.QueryEscape(c.Token())
}

// ServeHTTP checks the request's host, token and, for writes, its origin
// and CSRF token, then serves it.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == ReconcilePath {
		// A system's report, with a bearer token of its own: no cookie,
		// no form, no page (reconcile_api.go).
		c.reconcileAPI(w, r)
		return
	}
	if !loopbackHost(r.Host) {
		// A page elsewhere that resolves its own name to 127.0.0.1 (DNS
		// rebinding) reaches the console under that name: refuse it.
		http.Error(w, "console: this console answers only to 127.0.0.1, [::1] or localhost; open the URL agentctl ui printed", http.StatusForbidden)
		return
	}
	cookie := cookieName(r.Host)
	var who *Approver
	if tok := r.URL.Query().Get("token"); tok != "" {
		if who = c.approverOf(tok); who == nil {
			c.deny(w)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		if r.Method == http.MethodGet {
			// Drop the token from the address bar and the history.
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
	} else if ck, err := r.Cookie(cookie); err == nil {
		who = c.approverOf(ck.Value)
	}
	if who == nil {
		if who = c.approverOf(r.Header.Get("X-Console-Token")); who == nil {
			c.deny(w)
			return
		}
	}
	if r.Method == http.MethodPost {
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			http.Error(w, "console: a write from another origin ("+o+") is refused; use the console's own page", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(c.csrf)) != 1 {
			http.Error(w, "console: the form's CSRF token is missing or stale; reload the page and submit again", http.StatusForbidden)
			return
		}
	}
	// One tenant's console (or the tenants of the approver's token): no
	// query and no form reaches another's records.
	for _, t := range []string{r.URL.Query().Get("tenant"), postedTenant(r)} {
		if t != "" && !who.allows(t) {
			http.Error(w, fmt.Sprintf("console: %s may see tenant %s only, not %s; open the console of that tenant, with a token that allows it", who.Name, strings.Join(who.Tenants, ", "), t), http.StatusForbidden)
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), approverKey{}, who))
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	// "no-referrer" would make the browser send "Origin: null" on forms.
	w.Header().Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

// approverOf is the approver whose token tok is, or nil.
func (c *Console) approverOf(tok string) *Approver { return tokenOwner(c.approvers, tok) }

// tokenOwner is the entry of list whose token tok is, or nil. Every token
// is compared, in constant time, so the time taken tells nothing of which.
func tokenOwner(list []Approver, tok string) *Approver {
	var found *Approver
	for i := range list {
		if tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(list[i].Token)) == 1 {
			found = &list[i]
		}
	}
	return found
}

// postedTenant is the tenant a form names (POST only).
func postedTenant(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	return r.PostFormValue("tenant")
}

func (c *Console) deny(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcpledger console"`)
	http.Error(w, "console: no valid access token; open the URL agentctl ui printed (it ends in ?token=...)", http.StatusUnauthorized)
}

// loopbackHost reports whether a Host header names this machine's
// loopback interface.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// cookieName is per port: browsers share cookies across the ports of one
// host, and two consoles must not see each other's token.
func cookieName(hostport string) string {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		port = "80"
	}
	return "mcpledger_console_" + port
}

// randomToken is 128 random bits, as text.
func randomToken() string { return rand.Text() }

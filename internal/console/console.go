// Package console is the ledger's local web console (agentctl ui): the
// records with filters and paging, one record with its timeline, the
// approvals queue with approve and deny, UNKNOWN records with a reconcile
// form, the figures of ledger stats as small charts, and new records as
// they arrive (server-sent events). Pages are rendered on the server with
// html/template; a few lines of plain JavaScript add the live updates.
//
//	c, err := console.New(console.Options{Store: st, Tenant: "acme", Who: "console:ana"})
//	ln, err := net.Listen("tcp", "127.0.0.1:0")
//	fmt.Println(c.URL(ln.Addr()))
//	http.Serve(ln, c)
//
// The console serves loopback clients only and guards every request with
// a random access token, passed once in the printed URL (as Jupyter does)
// and kept in a cookie after that; a request without it gets 401. Writes
// are POST requests that must carry the page's CSRF token and, when the
// browser sends one, an Origin of the console itself.
package console

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
)

//go:embed web
var webFS embed.FS

// Options configure a Console.
type Options struct {
	// Store is the ledger (required).
	Store ledger.Store
	// Tenant is shown first; the tenant filter shows others.
	Tenant string
	// Who names the person using the console on approvals and
	// reconciliations ("console" when empty).
	Who string
	// Policy is the approvers' policy: with DistinctApprover the requester
	// cannot approve their own call here (confirm.Default() when nil).
	Policy *confirm.Policy
	// Token is the access token (a random one when empty).
	Token string
	// Poll is how often live updates look for new records (1s when zero).
	Poll time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Console is an http.Handler serving the web console.
type Console struct {
	opts  Options
	csrf  string
	pages map[string]*template.Template
	mux   *http.ServeMux
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
	// A person reads records as they stand now: an approval whose expiry
	// passed is REJECTED on every page, and cannot be approved.
	opts.Store = ledger.AsReadStore(opts.Store, opts.Now)
	c := &Console{opts: opts, csrf: randomToken(), mux: http.NewServeMux()}
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
		"form": func(csrf string, r *ledger.Record, back string) formView {
			return formView{CSRF: csrf, R: r, Back: back}
		},
	}
	c.pages = map[string]*template.Template{}
	for _, page := range []string{"records", "record", "approvals", "unknown", "stats", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(webFS, "web/layout.html", "web/"+page+".html")
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

// Token is the access token the console's URL carries.
func (c *Console) Token() string { return c.opts.Token }

// URL is the address to open: the console at addr, with the access token.
func (c *Console) URL(addr net.Addr) string {
	return "http://" + addr.String() + "/?token=" + url.QueryEscape(c.opts.Token)
}

// ServeHTTP checks the request's host, token and, for writes, its origin
// and CSRF token, then serves it.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackHost(r.Host) {
		// A page elsewhere that resolves its own name to 127.0.0.1 (DNS
		// rebinding) reaches the console under that name: refuse it.
		http.Error(w, "console: this console answers only to 127.0.0.1, [::1] or localhost; open the URL agentctl ui printed", http.StatusForbidden)
		return
	}
	cookie := cookieName(r.Host)
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !c.tokenOK(tok) {
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
	} else if ck, err := r.Cookie(cookie); err != nil || !c.tokenOK(ck.Value) {
		if !c.tokenOK(r.Header.Get("X-Console-Token")) {
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
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	// "no-referrer" would make the browser send "Origin: null" on forms.
	w.Header().Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) tokenOK(tok string) bool {
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(c.opts.Token)) == 1
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

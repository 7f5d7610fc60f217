package confirm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcpledger/mcpledger/ledger"
)

// maxShownArgs bounds the argument text in a prompt; the rest is counted,
// never dropped silently.
const maxShownArgs = 2048

// maxShownEarlier bounds the earlier attempts listed in a prompt.
const maxShownEarlier = 5

// Summary is the plain-text description of the call a person is asked about:
// tool, server, why, tenant and session, key, arguments, annotations and
// earlier attempts. Every value from the server or the model is escaped, so
// control characters or terminal escapes in a tool name cannot redraw the
// prompt.
func (r Request) Summary() string {
	var b strings.Builder
	server := "an unnamed server"
	if r.Server != "" {
		server = "server " + quote(r.Server)
	}
	fmt.Fprintf(&b, "%s on %s needs your confirmation\n", safe(r.Tool), server)
	row := func(label, value string) {
		fmt.Fprintf(&b, "  %-12s %s\n", label+":", value)
	}
	if r.Why != "" {
		row("why", safe(r.Why))
	}
	if r.Tenant != "" {
		row("tenant", safe(r.Tenant))
	}
	if r.Session != "" {
		row("session", safe(r.Session))
	}
	if r.Key != "" {
		row("key", safe(r.Key))
	}
	row("arguments", arguments(r.Arguments))
	row("annotations", annotations(r.Hints))
	row("earlier", earlier(r.Earlier))
	return b.String()
}

func arguments(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "none"
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "               ", "  "); err != nil {
		return safe(string(raw)) + " (not valid JSON)"
	}
	text := safeText(out.String())
	if len(text) > maxShownArgs {
		cut := strings.LastIndexByte(text[:maxShownArgs], '\n')
		if cut <= 0 {
			cut = maxShownArgs
		}
		text = fmt.Sprintf("%s\n               … %d more bytes not shown", text[:cut], len(text)-cut)
	}
	return text
}

func annotations(a *Hints) string {
	if a == nil {
		return "none (the server describes no effects)"
	}
	h := hintsOf(a)
	var parts []string
	switch {
	case h.readOnly:
		parts = append(parts, "read-only")
	case h.destructive:
		parts = append(parts, "destructive")
	default:
		parts = append(parts, "writes, not destructive")
	}
	if h.idempotent {
		parts = append(parts, "idempotent")
	} else {
		parts = append(parts, "not idempotent")
	}
	if h.openWorld {
		parts = append(parts, "reaches outside systems")
	} else {
		parts = append(parts, "closed world")
	}
	if a.Title != "" {
		parts = append(parts, "title "+quote(a.Title))
	}
	return strings.Join(parts, ", ") + " (as the server claims)"
}

func earlier(recs []*ledger.Record) string {
	if len(recs) == 0 {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d", len(recs))
	for i, r := range recs {
		if i == maxShownEarlier {
			fmt.Fprintf(&b, "\n               … %d more", len(recs)-i)
			break
		}
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "\n               - %s %s key %s, %d attempt(s)",
			r.CreatedAt.UTC().Format(time.RFC3339), r.State, safe(r.Key), r.Attempts)
		if r.Session != "" {
			fmt.Fprintf(&b, ", session %s", safe(r.Session))
		}
		if r.Approval != nil {
			fmt.Fprintf(&b, ", %s by %s", r.Approval.Decision, safe(r.Approval.By))
		}
	}
	return b.String()
}

// safe returns s unchanged when every character prints, else a quoted Go
// string with escapes, so nothing it holds can move the cursor or recolour
// the terminal.
func safe(s string) string {
	if strings.IndexFunc(s, notGraphic) < 0 {
		return s
	}
	return strconv.QuoteToGraphic(s)
}

func quote(s string) string { return strconv.QuoteToGraphic(s) }

// safeText escapes non-printing characters except the newlines and spaces
// of indented JSON.
func safeText(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r != '\n' && notGraphic(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r != '\n' && notGraphic(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func notGraphic(r rune) bool { return !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r) }

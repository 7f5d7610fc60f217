package confirm

import (
	"strings"
	"unicode/utf8"
)

// Match reports whether name matches the glob pattern, ignoring case. '*'
// matches any run of characters (including none and including '/', unlike
// path.Match, because server labels may hold slashes), '?' matches one
// character, and '|' separates alternatives ("get_*|list_*"); every other
// character matches itself. There is no escaping: MCP tool names are made of
// letters, digits, '_', '-' and '.', so they never need a literal '*', '?'
// or '|'.
func Match(pattern, name string) bool {
	_, ok := matchAlt(pattern, name)
	return ok
}

// matchAlt returns the first alternative of pattern that matches name.
func matchAlt(pattern, name string) (string, bool) {
	// Fold case once, not per alternative; the folded alternative is
	// returned only for messages.
	lp, n := strings.ToLower(pattern), strings.ToLower(name)
	for {
		alt, rest, more := strings.Cut(lp, "|")
		if matchFolded(alt, n) {
			return alt, true
		}
		if !more {
			return "", false
		}
		lp = rest
	}
}

// matchFolded matches one alternative; both strings are already lower case.
func matchFolded(p, n string) bool {
	// Linear-time wildcard matching: remember the last '*' and the name
	// position it would consume next, and back up there on a mismatch.
	px, nx := 0, 0
	starPx, starNx := -1, 0
	for px < len(p) || nx < len(n) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(n) {
					_, w := utf8.DecodeRuneInString(n[nx:])
					px++
					nx += w
					continue
				}
			default:
				if nx < len(n) && n[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		if starPx >= 0 && starNx < len(n) {
			_, w := utf8.DecodeRuneInString(n[starNx:])
			starNx += w
			px, nx = starPx+1, starNx
			continue
		}
		return false
	}
	return true
}

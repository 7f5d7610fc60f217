package postgres

import (
	"regexp"
	"strings"
)

// masked replaces a password in what MaskDSN returns.
const masked = "xxxxx"

var (
	// userinfoPassword is the password of a URL's user info:
	// scheme://user:PASSWORD@host. The user name and password stop at the
	// characters that end a URL authority, so a password holding '@' is
	// masked up to its last '@'.
	userinfoPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^:@/?#\s]*:)([^\s/?#]*)@`)
	// passwordParam is a password given as a parameter: password=…,
	// passwd=… or pwd=… in a URL query or a keyword/value connection
	// string (host=h password='s e c r e t'), quoted or not.
	passwordParam = regexp.MustCompile(`(?i)(\b(?:password|passwd|pwd|sslpassword)\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;'"]*)`)
)

// MaskDSN returns s with every database password in it replaced by
// "xxxxx": the password of a URL's user info (postgres://u:PASSWORD@h/db)
// and password= parameters, in a URL query (?password=…) or a keyword/value
// connection string (host=h password=…). s may be a DSN or a whole message
// that quotes one; everything else is left as it is. Messages that print a
// DSN pass it through MaskDSN first.
func MaskDSN(s string) string {
	s = userinfoPassword.ReplaceAllString(s, "${1}"+masked+"@")
	return passwordParam.ReplaceAllStringFunc(s, func(m string) string {
		sub := passwordParam.FindStringSubmatch(m)
		value := sub[2]
		if value == "" {
			return m // password= with no value hides nothing
		}
		// Punctuation that ends the value in a sentence ("…password=x: no
		// route") stays: a message reads the same with the password masked.
		tail := ""
		if trimmed := strings.TrimRight(value, ":,.)]"); value[0] != '\'' && value[0] != '"' && trimmed != "" {
			tail = value[len(trimmed):]
		}
		return sub[1] + masked + tail
	})
}

package ledger

import (
	"regexp"
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
		if sub[2] == "" {
			return m // password= with no value hides nothing
		}
		return sub[1] + masked
	})
}

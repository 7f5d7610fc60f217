package postgres_test

import (
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger/postgres"
)

func TestMaskDSN(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"user info", "postgres://u:s3cretpw@h/db", "postgres://u:xxxxx@h/db"},
		{"user info with port and query", "postgresql://app:s3cret@db.example:5432/app?sslmode=disable", "postgresql://app:xxxxx@db.example:5432/app?sslmode=disable"},
		{"password with @", "postgres://u:p@ss@h/db", "postgres://u:xxxxx@h/db"},
		{"user without password", "postgres://u@h/db", "postgres://u@h/db"},
		{"query parameter", "postgresql://127.0.0.1:1/app?password=s3cretpw", "postgresql://127.0.0.1:1/app?password=xxxxx"},
		{"query parameter among others", "postgres://h/db?sslmode=disable&password=s3cret&user=u", "postgres://h/db?sslmode=disable&password=xxxxx&user=u"},
		{"both", "postgres://u:one@h/db?password=two", "postgres://u:xxxxx@h/db?password=xxxxx"},
		{"keyword/value", "host=h user=u password=s3cret dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"keyword/value quoted", "host=h password='s3 cret' dbname=db", "host=h password=xxxxx dbname=db"},
		{"upper case", "host=h PASSWORD=s3cret", "host=h PASSWORD=xxxxx"},
		{"in a message", `cannot reach the ledger database "postgres://u:s3cret@h:1/db": refused`, `cannot reach the ledger database "postgres://u:xxxxx@h:1/db": refused`},
		{"no DSN", "/var/lib/ledger.db", "/var/lib/ledger.db"},
		{"empty password parameter", "postgres://h/db?password=", "postgres://h/db?password="},
		{"a sentence goes on after it", "the ledger postgres://h/db?password=s3cret: connection refused", "the ledger postgres://h/db?password=xxxxx: connection refused"},
		{"keyword/value in parentheses", "(host=h password=s3cret)", "(host=h password=xxxxx)"},
		{"two URLs", "a postgres://u:one@h/a and postgres://v:two@k/b", "a postgres://u:xxxxx@h/a and postgres://v:xxxxx@k/b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := postgres.MaskDSN(tc.in); got != tc.want {
				t.Errorf("MaskDSN(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzMaskDSN(f *testing.F) {
	f.Add("postgres://u", "h/db")
	f.Add("host=h password", "x")
	f.Fuzz(func(t *testing.T, prefix, rest string) {
		const secret = "Zq7secretZq7"
		for _, s := range []string{
			"postgres://u:" + secret + "@" + strings.TrimLeft(rest, "@/?# "),
			prefix + " password=" + secret + " " + rest,
			"postgres://h/db?password=" + secret + "&" + rest,
		} {
			if strings.Contains(postgres.MaskDSN(s), secret) {
				t.Errorf("MaskDSN(%q) = %q; the password is still there", s, postgres.MaskDSN(s))
			}
		}
	})
}

// Package pgtest gives tests a PostgreSQL database under one rule, shared by
// every package whose tests need one:
//
//   - MCPLEDGER_TEST_POSTGRES holds a postgres:// URL of a database the tests
//     may create schemas in (.ci/postgres.sh prints one);
//   - when it is unset on a developer's machine the test is skipped, with a
//     line saying why and how to set it;
//   - when it is unset and CI=true the test fails, so CI can never pass
//     PostgreSQL tests by skipping them.
//
// Each test gets its own schema, dropped when the test ends, so packages
// tested in parallel against one server do not collide:
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Schema(t) // ...&search_path=t_something_1a2b3c4d
//		st, err := postgres.Open(ctx, url, nil)
//		...
//	}
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env is the variable that holds the test database URL.
const Env = "MCPLEDGER_TEST_POSTGRES"

// URL returns the test database URL, or skips t (fails it under CI=true)
// when Env is unset.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u != "" {
		return u
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is unset and CI=true: CI must run the PostgreSQL tests (eval \"$(.ci/postgres.sh)\" sets it)", Env)
	}
	t.Skipf("%s is unset: skipping the PostgreSQL test; run eval \"$(sudo .ci/postgres.sh)\" or point it at a postgres:// URL of a database you may create schemas in", Env)
	return ""
}

// Schema creates a fresh schema for t, drops it (with everything in it) when
// t ends, and returns the test database URL with search_path set to it.
// postgres.Open puts the ledger's tables in the first schema of
// search_path, so the URL alone isolates a test, even across the processes
// it starts.
func Schema(t testing.TB) string {
	t.Helper()
	base := URL(t)
	name := schemaName(t.Name())
	ident := pgx.Identifier{name}.Sanitize()
	if err := admin.exec(base, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", ident, err)
	}
	t.Cleanup(func() {
		if err := admin.exec(base, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", ident, err)
		}
	})
	u, err := WithSearchPath(base, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// admin is the one connection per test process that creates and drops
// schemas: a connection costs a password exchange, which is slow under the
// race detector, and tests make many schemas.
var admin adminConn

type adminConn struct {
	mu   sync.Mutex // guards conn and url
	conn *pgx.Conn
	url  string
}

func (a *adminConn) exec(url, sql string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if a.conn != nil && (a.url != url || a.conn.IsClosed()) {
		_ = a.conn.Close(ctx) // replaced below; its server may be gone
		a.conn = nil
	}
	if a.conn == nil {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", Env, err)
		}
		a.conn, a.url = c, url
	}
	if _, err := a.conn.Exec(ctx, sql); err != nil {
		if a.conn.IsClosed() {
			a.conn = nil
		}
		return err
	}
	return nil
}

// WithSearchPath returns raw with its search_path parameter set to schema.
func WithSearchPath(raw, schema string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// schemaName turns a test name into a short, unique, lower-case schema
// name: "t_" + up to 32 bytes of the name + "_" + 8 random hex digits.
func schemaName(test string) string {
	var b strings.Builder
	b.WriteString("t_")
	for _, c := range strings.ToLower(test) {
		if b.Len() >= 34 {
			break
		}
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(err)
	}
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(r[:]))
	return b.String()
}

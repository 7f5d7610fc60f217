package payments

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/server"
)

// LoadTokens reads a tokens file: one "TOKEN TENANT" pair a line, '#'
// starting a comment line. Tenants follow the key rules.
func LoadTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("payments: tokens: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	tokens := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("payments: tokens %s line %d: want TOKEN TENANT", path, n)
		}
		if err := ledger.ValidateTenant(fields[1]); err != nil {
			return nil, fmt.Errorf("payments: tokens %s line %d: %w", path, n, err)
		}
		if _, dup := tokens[fields[0]]; dup {
			return nil, fmt.Errorf("payments: tokens %s line %d: the token is listed twice", path, n)
		}
		tokens[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("payments: tokens %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("payments: tokens %s: no tokens", path)
	}
	return tokens, nil
}

// PaymentKey is the payments table's key for tenant's idempotency key.
func PaymentKey(tenant, key string) string {
	if tenant == "" || tenant == server.DefaultTenant {
		return key
	}
	return tenant + "/" + key
}

// HTTPHandler wraps h, the server's streamable HTTP handler, so that only
// requests with a valid bearer token reach it (401 otherwise), each with
// its token's tenant. Without Tokens it returns h as it is.
func (a *App) HTTPHandler(h http.Handler) http.Handler {
	if len(a.cfg.Tokens) == 0 {
		return h
	}
	tokens := a.cfg.Tokens
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tenant, ok := tokens[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: tenant, Extra: map[string]any{"tenant": tenant}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	return auth.RequireBearerToken(verify, nil)(h)
}

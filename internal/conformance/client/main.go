// Command client is an MCP client for the client mode of the official MCP
// conformance suite, with every tool call made through mcpledger's
// client.Client: the suite then checks that the ledger changes nothing a
// server can see of a client (handshake, calls, elicitation defaults, the
// resumption of a broken SSE stream, OAuth).
//
//	conformance client --command "/path/to/client"
//
// The harness appends its mock server's URL and names the scenario in
// MCP_CONFORMANCE_SCENARIO (and its settings, JSON, in
// MCP_CONFORMANCE_CONTEXT). The ledger is a SQLite file in a temporary
// directory, removed on exit. The scenarios are those of go-sdk's
// conformance/everything-client, whose results this client must match.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// scenario runs one scenario against the server at url; settings are the
// harness's MCP_CONFORMANCE_CONTEXT.
type scenario func(ctx context.Context, url string, settings map[string]any) error

var scenarios = map[string]scenario{
	"initialize":                          initialize,
	"tools_call":                          toolsCall,
	"elicitation-sep1034-client-defaults": elicitationDefaults,
	"sse-retry":                           sseRetry,
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return errors.New("usage: client SERVER_URL, with MCP_CONFORMANCE_SCENARIO set (the conformance harness does both)")
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := scenarios[name]
	if !ok && strings.HasPrefix(name, "auth/") {
		sc, ok = authorized, true
	}
	if !ok {
		return fmt.Errorf("unknown scenario %q in MCP_CONFORMANCE_SCENARIO; known: %s and auth/*", name, strings.Join(known(), ", "))
	}
	var settings map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &settings); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT is not a JSON object: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sc(ctx, os.Args[1], settings); err != nil {
		return fmt.Errorf("scenario %s: %w", name, err)
	}
	return nil
}

func known() []string {
	var names []string
	for n := range scenarios {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ledgerClient connects to the server at serverURL through the ledger: a
// SQLite file in a temporary directory, every tool allowed (no one is there
// to confirm). done closes the client and removes the ledger.
func ledgerClient(ctx context.Context, serverURL string, mo *mcp.ClientOptions, oauth auth.OAuthHandler) (c *client.Client, done func(), err error) {
	dir, err := os.MkdirTemp("", "mcpledger-conformance-")
	if err != nil {
		return nil, nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), nil)
	if err != nil {
		return nil, nil, errors.Join(err, os.RemoveAll(dir))
	}
	cleanup := func() {
		if err := errors.Join(st.Close(), os.RemoveAll(dir)); err != nil {
			fmt.Fprintln(os.Stderr, "conformance client: cleaning up the ledger:", err)
		}
	}
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		mc := mcp.NewClient(&mcp.Implementation{Name: "mcpledger-conformance-client", Version: "1.0.0"}, mo)
		return mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: serverURL, OAuthHandler: oauth}, nil)
	}
	c, err = client.Dial(ctx, connect, st, &client.Options{
		Policy: &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow, Note: "a conformance run has no one to ask"}}},
	})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return c, func() {
		if err := c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "conformance client: closing the session:", err)
		}
		cleanup()
	}, nil
}

// callListed lists the tools, checks that tool is among them, and calls it
// through the ledger.
func callListed(ctx context.Context, c *client.Client, tool string, args map[string]any) error {
	res, err := c.Session().ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if !slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == tool }) {
		return fmt.Errorf("the server lists no tool %q", tool)
	}
	if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args}); err != nil {
		return fmt.Errorf("tools/call %s: %w", tool, err)
	}
	return nil
}

func initialize(ctx context.Context, serverURL string, _ map[string]any) error {
	c, done, err := ledgerClient(ctx, serverURL, nil, nil)
	if err != nil {
		return err
	}
	defer done()
	if _, err := c.Session().ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	return nil
}

func toolsCall(ctx context.Context, serverURL string, _ map[string]any) error {
	c, done, err := ledgerClient(ctx, serverURL, nil, nil)
	if err != nil {
		return err
	}
	defer done()
	return callListed(ctx, c, "add_numbers", map[string]any{"a": 5, "b": 3})
}

// elicitationDefaults accepts the server's question with no content of its
// own: the SDK fills in the schema's defaults (SEP-1034), which the suite
// checks.
func elicitationDefaults(ctx context.Context, serverURL string, _ map[string]any) error {
	accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}
	c, done, err := ledgerClient(ctx, serverURL, &mcp.ClientOptions{ElicitationHandler: accept}, nil)
	if err != nil {
		return err
	}
	defer done()
	return callListed(ctx, c, "test_client_elicitation_defaults", map[string]any{})
}

// sseRetry calls a tool whose server closes the response stream mid-call:
// the transport resumes it with Last-Event-ID, and the call is not sent
// twice.
func sseRetry(ctx context.Context, serverURL string, _ map[string]any) error {
	c, done, err := ledgerClient(ctx, serverURL, nil, nil)
	if err != nil {
		return err
	}
	defer done()
	return callListed(ctx, c, "test_reconnection", map[string]any{})
}

// authorized runs the OAuth scenarios: the SDK's authorization-code handler
// on the transport, then a call through the ledger.
func authorized(ctx context.Context, serverURL string, settings map[string]any) error {
	const redirect = "http://localhost:3000/callback"
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetchCode,
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{
			URL: "https://conformance-test.local/client-metadata.json",
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirect}},
		},
	}
	id, _ := settings["client_id"].(string)
	secret, _ := settings["client_secret"].(string)
	if id != "" && secret != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return fmt.Errorf("the OAuth handler: %w", err)
	}
	c, done, err := ledgerClient(ctx, serverURL, nil, h)
	if err != nil {
		return err
	}
	defer done()
	return callListed(ctx, c, "test-tool", map[string]any{})
}

// fetchCode follows the authorization URL one step: the suite's
// authorization server redirects at once to the callback with the code.
func fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // only the Location header is read
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, fmt.Errorf("the authorization server's redirect: %w", err)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

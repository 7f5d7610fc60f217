package mcpgo_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	mgclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mgmcp "github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/mcpgo"
)

// A server that redirects mcp-go's client to another host: with
// mcpgo.HTTPClient the request fails there and the other host never sees
// the credentials; a same-host redirect is still followed.
func TestHTTPClientRefusesCrossHostRedirects(t *testing.T) {
	var leaked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)

	tr, err := transport.NewStreamableHTTP(front.URL+"/mcp",
		transport.WithHTTPBasicClient(mcpgo.HTTPClient(nil)),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer secret-token"}))
	if err != nil {
		t.Fatal(err)
	}
	c := mgclient.NewClient(mcpgo.Transport(tr))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mgmcp.InitializeRequest{}
	init.Params.ProtocolVersion = mgmcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mgmcp.Implementation{Name: "agent", Version: "v1"}
	_, err = c.Initialize(context.Background(), init)
	if !errors.Is(err, mcpgo.ErrCrossHostRedirect) {
		t.Errorf("Initialize through a cross-host redirect = %v; want ErrCrossHostRedirect", err)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the other host saw the Authorization header %d times", n)
	}

	// The same host: followed.
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.WriteHeader(http.StatusNoContent) })
	same := httptest.NewServer(mux)
	t.Cleanup(same.Close)
	resp, err := mcpgo.HTTPClient(nil).Get(same.URL + "/old")
	if err != nil {
		t.Fatalf("GET through a same-host redirect = %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("the same-host redirect was not followed")
	}
}

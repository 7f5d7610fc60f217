package mcpgo

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrCrossHostRedirect: the server redirected a request to another host,
// which HTTPClient refuses.
var ErrCrossHostRedirect = errors.New("mcpgo: refused a redirect to another host")

// HTTPClient returns a copy of base (http.DefaultClient when nil) that
// refuses to follow a redirect to another host or scheme. mcp-go's
// streamable HTTP client follows redirects with net/http's defaults, which
// carry headers such as Authorization to wherever a server points
// (GO-2026-6911, no fix upstream); with this client a redirect elsewhere
// fails the request instead. Give it to mcp-go's transport:
//
//	t, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(mcpgo.HTTPClient(nil)))
func HTTPClient(base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	next := base.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if first := via[0].URL; req.URL.Host != first.Host || req.URL.Scheme != first.Scheme {
			return fmt.Errorf("%w: %s://%s to %s://%s; point the client at the server's own address",
				ErrCrossHostRedirect, first.Scheme, first.Host, req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("mcpgo: stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

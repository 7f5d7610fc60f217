package server

import (
	"maps"
	"time"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Capability returns the experimental capability entry a key-aware server
// advertises, for ServerCapabilities.Experimental:
//
//	{"io.github.mcpledger/idempotency": {"version": 1, "retentionSeconds": N}}
//
// A Guard's middleware adds it by itself; a proxy that forwards to a
// key-aware upstream uses this to advertise the same.
func Capability(retention time.Duration) map[string]any {
	return map[string]any{wire.Capability: capabilityValue(retention)}
}

func capabilityValue(retention time.Duration) map[string]any {
	return guard.Capability(retention, false)
}

// advertise adds the capability to an initialize or server/discover result
// unless the server already set one.
func (g *Guard) advertise(res mcp.Result) {
	var caps **mcp.ServerCapabilities
	switch r := res.(type) {
	case *mcp.InitializeResult:
		caps = &r.Capabilities
	case *mcp.DiscoverResult:
		caps = &r.Capabilities
	default:
		return
	}
	c := new(mcp.ServerCapabilities)
	if *caps != nil {
		*c = **caps
	}
	if _, ok := c.Experimental[wire.Capability]; ok {
		return
	}
	// The SDK hands out a fresh capabilities value per result; copy anyway
	// so the server's configured map is never written.
	exp := maps.Clone(c.Experimental)
	if exp == nil {
		exp = make(map[string]any, 1)
	}
	// With a Tenant function keys are kept per tenant, taken from the
	// authenticated request: a client need not make its tenants' keys
	// distinct itself.
	exp[wire.Capability] = guard.Capability(g.opts.Retention, g.opts.Tenant != nil)
	c.Experimental = exp
	*caps = c
}

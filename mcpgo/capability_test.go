package mcpgo_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/mcpgo"
	"github.com/mcpledger/mcpledger/wire"
)

// A guard with a tenant function says it keeps keys per tenant; one
// without does not, and clients then make their tenants' keys distinct.
func TestCapabilitySaysTenants(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	plain := mcpgo.NewGuard(st, nil)
	if wire.TenantAware(plain.Capability()) {
		t.Errorf("a guard without a tenant function says it keeps keys per tenant: %v", plain.Capability())
	}
	tenants := mcpgo.NewGuard(st, &mcpgo.ServerOptions{Tenant: func(context.Context, mcp.CallToolRequest) (string, error) { return "a", nil }})
	if !wire.TenantAware(tenants.Capability()) {
		t.Errorf("a guard with a tenant function does not say so: %v", tenants.Capability())
	}
}

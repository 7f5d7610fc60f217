package server

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TenantFromToken is an Options.Tenant for a server behind go-sdk's bearer
// token middleware (auth.RequireBearerToken): the tenant is the verified
// token's TokenInfo.Extra["tenant"] (a string), else its UserID, never the
// client's say-so. A request without token info (a server that
// authenticates no one, or stdio) is DefaultTenant; a verified token that
// names no tenant is refused, and nothing is stored.
func TenantFromToken(_ context.Context, req *mcp.CallToolRequest) (string, error) {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return DefaultTenant, nil
	}
	ti := req.Extra.TokenInfo
	if t, ok := ti.Extra["tenant"].(string); ok && t != "" {
		return t, nil
	}
	if ti.UserID != "" {
		return ti.UserID, nil
	}
	return "", errTokenWithoutTenant
}

var errTokenWithoutTenant = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: `the bearer token names no tenant (TokenInfo.Extra["tenant"] or UserID); issue a token for a tenant`}

package confirm

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Hints are a tool's annotations in SDK-free terms, for callers on an MCP
// SDK other than go-sdk: nil is "not said" (the MCP defaults then apply:
// not read-only, destructive, not idempotent, open world).
type Hints struct {
	Title                                        string
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// Annotations is h as the annotations Tool and Request carry (nil for
// nil h: no annotations at all, which the policy treats as nothing known).
func (h *Hints) Annotations() *mcp.ToolAnnotations {
	if h == nil {
		return nil
	}
	a := &mcp.ToolAnnotations{Title: h.Title, DestructiveHint: h.Destructive, OpenWorldHint: h.OpenWorld}
	if h.ReadOnly != nil {
		a.ReadOnlyHint = *h.ReadOnly
	}
	if h.Idempotent != nil {
		a.IdempotentHint = *h.Idempotent
	}
	return a
}

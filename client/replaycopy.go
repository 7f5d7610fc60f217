package client

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// copyResult deep-copies a decoded result whose parts it knows (text
// content and JSON values), so a remembered replay can be handed to each
// caller as its own copy without decoding the stored bytes again. It
// reports false for anything else; the caller then decodes.
func copyResult(r *mcp.CallToolResult) (*mcp.CallToolResult, bool) {
	if r.NeedsInput() {
		return nil, false
	}
	cp := *r // keeps the unexported result type, so the copy marshals alike
	var ok bool
	if cp.StructuredContent, ok = copyJSON(r.StructuredContent); !ok {
		return nil, false
	}
	if cp.Meta, ok = copyMeta(r.Meta); !ok {
		return nil, false
	}
	if r.Content != nil {
		cp.Content = make([]mcp.Content, len(r.Content))
	}
	for i, c := range r.Content {
		t, isText := c.(*mcp.TextContent)
		if !isText {
			return nil, false
		}
		tc := *t
		if tc.Meta, ok = copyMeta(t.Meta); !ok {
			return nil, false
		}
		if t.Annotations != nil {
			a := *t.Annotations
			a.Audience = slices.Clone(a.Audience)
			tc.Annotations = &a
		}
		cp.Content[i] = &tc
	}
	return &cp, true
}

func copyMeta(m mcp.Meta) (mcp.Meta, bool) {
	if m == nil {
		return nil, true
	}
	v, ok := copyJSON(map[string]any(m))
	if !ok {
		return nil, false
	}
	return mcp.Meta(v.(map[string]any)), true
}

// copyJSON deep-copies a value decoded from JSON into any.
func copyJSON(v any) (any, bool) {
	switch t := v.(type) {
	case nil, string, float64, bool:
		return t, true
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			c, ok := copyJSON(e)
			if !ok {
				return nil, false
			}
			m[k] = c
		}
		return m, true
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			c, ok := copyJSON(e)
			if !ok {
				return nil, false
			}
			s[i] = c
		}
		return s, true
	}
	return nil, false
}

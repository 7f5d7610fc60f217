package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultText renders a tool result for a person: text items as they are,
// other items as one bracketed line each, and the structured content when
// there is no text at all.
func resultText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var lines []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			lines = append(lines, c.Text)
		case *mcp.ImageContent:
			lines = append(lines, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			lines = append(lines, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			lines = append(lines, fmt.Sprintf("[link %s %s]", c.URI, c.Name))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				lines = append(lines, c.Resource.Text)
				continue
			}
			uri := ""
			if c.Resource != nil {
				uri = c.Resource.URI
			}
			lines = append(lines, fmt.Sprintf("[resource %s]", uri))
		default:
			b, err := json.Marshal(c)
			if err != nil {
				lines = append(lines, "[content that cannot be shown]")
				continue
			}
			lines = append(lines, string(b))
		}
	}
	if len(lines) == 0 && r.StructuredContent != nil {
		b, err := json.Marshal(r.StructuredContent)
		if err == nil {
			lines = append(lines, string(b))
		}
	}
	return strings.Join(lines, "\n")
}

// decodeResult parses a stored CallToolResult; nil when there is none.
func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("stored result is not a CallToolResult: %w", err)
	}
	return &r, nil
}

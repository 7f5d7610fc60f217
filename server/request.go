package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lookup finds a tool by name through the rest of the handler chain. go-sdk
// has no getter for registered tools, so the guard asks the server's own
// tools/list handler: it always reflects AddTool and RemoveTools, and needs
// no second registry the server author could forget to update. A nil tool
// with a nil error means there is no such tool.
func lookup(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest) (*mcp.Tool, error) {
	cursor := ""
	for {
		lreq := &mcp.ListToolsRequest{
			Session: req.Session,
			Params:  &mcp.ListToolsParams{Cursor: cursor},
			Extra:   req.Extra,
		}
		res, err := next(ctx, "tools/list", lreq)
		if err != nil {
			return nil, fmt.Errorf("server: listing tools to find %q: %w", req.Params.Name, err)
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return nil, fmt.Errorf("server: listing tools to find %q: unexpected result %T", req.Params.Name, res)
		}
		for _, t := range list.Tools {
			if t.Name == req.Params.Name {
				return t, nil
			}
		}
		if list.NextCursor == "" || list.NextCursor == cursor {
			return nil, nil
		}
		cursor = list.NextCursor
	}
}

// schemaEntry caches a tool's resolved input schema; err is set when the
// schema does not resolve, and such tools are not validated here.
type schemaEntry struct {
	resolved *jsonschema.Resolved
	err      error
}

// validate checks args against the tool's input schema before anything is
// claimed, so a malformed call gets -32602 and leaves no record behind
// (the SDK would otherwise turn it into an isError result that the ledger
// would have to keep as FAILED).
func (g *Guard) validate(tool *mcp.Tool, args map[string]any) error {
	if tool.InputSchema == nil {
		return nil
	}
	v, ok := g.schemas.Load(tool)
	if !ok {
		v, _ = g.schemas.LoadOrStore(tool, resolveSchema(tool.InputSchema))
	}
	e := v.(*schemaEntry)
	if e.err != nil {
		return nil
	}
	// ApplyDefaults mutates; validate a shallow copy so the caller's map
	// keeps what the client sent.
	m := make(map[string]any, len(args))
	for k, val := range args {
		m[k] = val
	}
	if err := e.resolved.ApplyDefaults(&m); err != nil {
		return err
	}
	return e.resolved.Validate(m)
}

func resolveSchema(s any) *schemaEntry {
	var schema *jsonschema.Schema
	switch t := s.(type) {
	case *jsonschema.Schema:
		schema = t
	default:
		b, err := json.Marshal(s)
		if err != nil {
			return &schemaEntry{err: err}
		}
		schema = new(jsonschema.Schema)
		if err := json.Unmarshal(b, schema); err != nil {
			return &schemaEntry{err: err}
		}
	}
	r, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return &schemaEntry{err: err}
	}
	return &schemaEntry{resolved: r}
}

package mcpgo

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// Outcome is a completed call and how it was answered ([caller.Outcome]
// over mcp-go's result): Result, the tool's result (a replay's carries
// the replay marker in its _meta); Key, the call's key; Replayed, the
// result came from the ledger, not a new execution; Record, the ledger
// record; Attempts, the requests this call sent (0 for a replay); and
// Decision, the re-planning guard's verdict when it was consulted.
type Outcome = caller.Outcome[*mcp.CallToolResult]

// CallTool calls a tool through the ledger, with the signature and meaning
// of mcp-go's (*client.Client).CallTool: a tool error is a result with
// IsError set, not a Go error. req is not modified.
func (c *Client) CallTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	o, err := c.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	return o.Result, nil
}

// Call is CallTool with how the call was answered. It runs package
// caller's one orchestration, as package client does for go-sdk: the same
// keys, policy, queue, retries, states and answers.
func (c *Client) Call(ctx context.Context, req mcp.CallToolRequest) (*Outcome, error) {
	o, err := c.c.Call(ctx, caller.Request[mcp.CallToolRequest]{Tool: req.Params.Name, Arguments: req.Params.Arguments, Params: req})
	if caller.Malformed(err) {
		// As mcp-go's client reports a server's -32602: errors.Is(err,
		// mcp.ErrInvalidParams) holds, and so does the ledger's reason.
		return nil, &invalidParams{err: err}
	}
	return o, err
}

// invalidParams is a call refused for its params before anything was
// recorded or sent (caller.Malformed).
type invalidParams struct{ err error }

func (e *invalidParams) Error() string   { return e.err.Error() }
func (e *invalidParams) Unwrap() []error { return []error{mcp.ErrInvalidParams, e.err} }

// ReplayResult decodes a finished record's result, as mcp-go's client would
// have, with the replay marker added to its _meta.
func ReplayResult(rec *ledger.Record) (*mcp.CallToolResult, error) {
	return caller.Replay[*mcp.CallToolResult](codec{}, rec)
}

// hints are a tool's annotations for the policy: nil when the server does
// not list the tool or sent no annotations (mcp-go decodes absent
// annotations to the zero value; nothing is known then).
func hints(t *mcp.Tool) *confirm.Hints {
	if t == nil || t.Annotations == (mcp.ToolAnnotation{}) {
		return nil
	}
	a := t.Annotations
	return &confirm.Hints{Title: a.Title, ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}
}

// codec is how the caller handles mcp-go's tool results.
type codec struct{}

func (codec) Encode(res *mcp.CallToolResult) (json.RawMessage, error) { return json.Marshal(res) }

func (codec) Decode(raw json.RawMessage) (*mcp.CallToolResult, error) {
	return mcp.ParseCallToolResult(&raw)
}

// Copy reports false: mcp-go's content types are not copied by hand, so
// a replay decodes the stored bytes.
func (codec) Copy(*mcp.CallToolResult) (*mcp.CallToolResult, bool) { return nil, false }

// Mark adds the replay marker to a fresh _meta of res, as mcp-go decodes
// a _meta member (JSON values).
func (codec) Mark(res *mcp.CallToolResult, m wire.Replay) {
	fields := map[string]any{}
	var progress mcp.ProgressToken
	if res.Meta != nil {
		for k, v := range res.Meta.AdditionalFields {
			fields[k] = v
		}
		progress = res.Meta.ProgressToken
	}
	var marker any = m
	if raw, err := json.Marshal(m); err == nil {
		var v map[string]any
		if json.Unmarshal(raw, &v) == nil {
			marker = v
		}
	}
	fields[wire.MetaReplay] = marker
	res.Meta = &mcp.Meta{ProgressToken: progress, AdditionalFields: fields}
}

func (codec) IsError(res *mcp.CallToolResult) bool { return res.IsError }

func (codec) Meta(res *mcp.CallToolResult) map[string]any {
	if res.Meta == nil {
		return nil
	}
	return res.Meta.AdditionalFields
}

// Text is the text content of res, joined.
func (codec) Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

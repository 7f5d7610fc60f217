package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/planner"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

// MetaError is the _meta entry of a call the ledger answered with an error
// result instead of the tool's: {"key": …, "state": …}. Runtimes read it;
// the model reads the text.
const MetaError = wire.MetaError

// ownTools are the proxy's ledger tools; an upstream tool of the same name
// is hidden, because the host's model asks the proxy's ledger about the
// calls it made through the proxy.
var ownTools = []string{planner.StatusTool, planner.ListTool}

// syncTools mirrors the upstream's tool list on the host-facing server.
// The SDK then serves tools/list and tells every host session when the
// list changed.
func (p *Proxy) syncTools(ctx context.Context, l *link) error {
	cs := l.upstream()
	if cs == nil {
		return fmt.Errorf("proxy: listing the upstream's tools: %w", mcp.ErrConnectionClosed)
	}
	fresh := map[string]*mcp.Tool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("proxy: listing the upstream's tools: %w", err)
		}
		if slices.Contains(ownTools, t.Name) {
			p.log.Warn("the upstream's tool is hidden by the proxy's ledger tool of the same name", "tool", t.Name)
			continue
		}
		fresh[t.Name] = t
	}
	p.toolsMu.Lock()
	defer p.toolsMu.Unlock()
	var gone []string
	for _, name := range p.tools {
		if _, ok := fresh[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		p.srv.RemoveTools(gone...)
	}
	names := slices.Sorted(maps.Keys(fresh))
	kept := names[:0]
	keyArgs := map[string]bool{}
	for _, name := range names {
		if err := p.addTool(fresh[name]); err != nil {
			p.log.Warn("the upstream's tool cannot be offered", "tool", name, "err", err)
			continue
		}
		kept = append(kept, name)
		if client.DeclaresKey(fresh[name]) {
			keyArgs[name] = true
		}
	}
	p.tools, p.keyArgs = kept, keyArgs
	return nil
}

// declaresKey reports whether the upstream's tool name declares an
// idempotency_key argument.
func (p *Proxy) declaresKey(name string) bool {
	p.toolsMu.Lock()
	defer p.toolsMu.Unlock()
	return p.keyArgs[name]
}

// addTool registers one upstream tool. The SDK panics on a tool it
// rejects (an input schema that is not an object, say); an upstream's bad
// tool must cost that tool, not the proxy.
func (p *Proxy) addTool(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("proxy: %v", r)
		}
	}()
	cp := *t
	p.srv.AddTool(&cp, p.callTool)
	return nil
}

// requestRefresh asks the refresher for a new tool list from l's upstream.
func (p *Proxy) requestRefresh(l *link) {
	select {
	case p.refresh <- l:
	default: // a refresh is already due; it will see this change too
	}
}

// refresher fetches the tool list when an upstream says it changed. It
// runs apart from the upstream's read loop, which the listing needs.
func (p *Proxy) refresher(ctx context.Context) {
	defer close(p.done)
	for {
		select {
		case <-ctx.Done():
			return
		case l := <-p.refresh:
			if err := p.syncTools(ctx, l); err != nil {
				p.log.Warn("refreshing the tool list", "err", err)
			}
		}
	}
}

// callTool runs one host tools/call through the link's ledger client.
func (p *Proxy) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	l, err := p.linkFor(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	c := l.ledger()
	if c == nil {
		return nil, fmt.Errorf("proxy: %w", mcp.ErrConnectionClosed)
	}
	if err := checkArguments(req.Params); err != nil {
		return nil, err
	}
	key, keyed, err := hostKey(req.Params, p.declaresKey(req.Params.Name))
	if err != nil {
		return nil, err
	}
	defer l.begin(ctx, req.Params)()
	params := &mcp.CallToolParams{Name: req.Params.Name, Meta: maps.Clone(req.Params.Meta)}
	if len(req.Params.Arguments) > 0 {
		params.Arguments = req.Params.Arguments
	}
	// A host that sends its own key gets exactly that operation.
	if keyed {
		ctx = client.WithKey(ctx, key)
	}
	out, err := c.Call(withRequest(ctx, req), params)
	// What the upstream sent before its answer goes before the proxy's.
	l.order.settle(ctx)
	if err != nil {
		if keyed {
			if je := wireError(err); je != nil {
				return nil, je
			}
		}
		return p.callError(ctx, req.Params.Name, keyed, err)
	}
	return out.Result, nil
}

// hostKey is the key the host sent, if any: in _meta, or in the
// idempotency_key argument when the upstream's tool declares one (declares).
// A key is a key wherever the host puts it: the proxy's record and the
// upstream call carry it, never a key of the proxy's own. Both present and
// different: -32602 naming both (wire.KeyOf reads the two places, as a
// key-aware server does). A key that is not a string (a number, null, an
// object) is a malformed request: -32602 naming the field, never dropped
// for a derived key, which would run the call under an identity the host
// did not ask for. A string that breaks the key rules, the empty string
// among them, is an invalid key (-31004 key_invalid), as a key-aware
// server answers it.
func hostKey(p *mcp.CallToolParamsRaw, declares bool) (key string, keyed bool, err error) {
	meta, args := map[string]any{}, map[string]any{}
	where := ""
	if v, ok := p.Meta[client.MetaKey]; ok {
		if _, isString := v.(string); !isString {
			return "", false, notAString(fmt.Sprintf("_meta[%q]", client.MetaKey), v)
		}
		meta[client.MetaKey], where = v, fmt.Sprintf("_meta[%q]", client.MetaKey)
	}
	if declares {
		v, ok, err := wire.KeyArg(p.Arguments)
		if err != nil {
			return "", false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpledger proxy: %s: %v", p.Name, err)}
		}
		if ok {
			if _, isString := v.(string); !isString {
				return "", false, notAString("the "+wire.ArgKey+" argument", v)
			}
			args[wire.ArgKey] = v
			if where == "" {
				where = "the " + wire.ArgKey + " argument"
			}
		}
	}
	if where == "" {
		return "", false, nil
	}
	key, err = wire.KeyOf(meta, args)
	switch {
	case errors.Is(err, wire.ErrKeysDiffer):
		return "", false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpledger proxy: %s: %v", p.Name, err)}
	case err != nil:
		sent, _ := meta[client.MetaKey].(string)
		if sent == "" {
			sent, _ = args[wire.ArgKey].(string)
		}
		return "", false, server.Error(ledger.CodeKeyRequired, ledger.ReasonKeyInvalid, fmt.Sprintf("mcpledger proxy: %s %q breaks the key rules (%v); send 1-255 of [A-Za-z0-9._:~-], or leave it out", where, shorten(sent, 40), err), 0)
	}
	return key, true, nil
}

// notAString is the -32602 answer to a key sent as another JSON type.
func notAString(where string, v any) error {
	b, _ := json.Marshal(v) // a value decoded from JSON encodes again
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpledger proxy: %s is %s, not a string; send the key as a string of 1-255 [A-Za-z0-9._:~-], or leave it out", where, shorten(string(b), 40))}
}

// checkArguments refuses arguments that are not a JSON object: a malformed
// request (-32602), answered before anything is claimed or sent.
func checkArguments(p *mcp.CallToolParamsRaw) error {
	a := bytes.TrimSpace(p.Arguments)
	if len(a) == 0 || a[0] == '{' || string(a) == "null" {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcpledger proxy: the arguments of %s are %s, not a JSON object; send them as an object of named values", p.Name, shorten(string(a), 40))}
}

// shorten cuts s to n bytes for a message.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// callError turns a call the ledger did not complete into what the host
// sees. Protocol errors of the request itself (unknown tool, invalid
// params, method not found) stay protocol errors, as the upstream sent
// them; a host request that was cancelled gets its context's error; every
// other outcome (denied, key reused, outcome unknown, still in progress,
// unreachable) becomes an isError result whose text tells the model what
// happened and what not to do, and whose _meta names the state. An error
// that names no state may have come after the request was sent: a keyed
// host gets UNKNOWN for it (-31003), never a result its ledger would keep
// as the tool's final answer.
func (p *Proxy) callError(ctx context.Context, tool string, keyed bool, err error) (*mcp.CallToolResult, error) {
	var je *jsonrpc.Error
	if errors.As(err, &je) && requestError(je.Code) {
		return nil, je
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case errors.Is(err, ledger.ErrInvalidKey):
		return nil, server.Error(ledger.CodeKeyRequired, ledger.ReasonKeyInvalid, err.Error(), 0)
	case errors.Is(err, client.ErrArgumentsTooLarge):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	ce, isCall := errs.AsType[*client.Error](err)
	if isCall {
		if je := p.storedRequestError(ctx, ce); je != nil {
			return nil, je
		}
	}
	st, named := client.StateOf(err)
	if !named && !errors.Is(err, ledger.ErrKeyReused) {
		st = ledger.StateUnknown
		if keyed {
			key := ""
			if isCall {
				key = ce.Key
			}
			return nil, rowError(st, key, fmt.Sprintf("The call to %s did not complete: %v. Its outcome is unknown; ask ledger_status before calling again.", tool, err))
		}
	}
	text := fmt.Sprintf("The call to %s did not complete: %v. Do not repeat it before asking ledger_status.", tool, err)
	meta := map[string]any{}
	if st != "" {
		meta["state"] = st
	}
	if isCall {
		if ce.Text != "" {
			text = ce.Text
		}
		meta["key"] = ce.Key
	}
	res := errorResult(text)
	res.Meta = mcp.Meta{MetaError: meta}
	return res, nil
}

// requestError reports whether code says the request itself was wrong:
// the upstream would answer the same again, so it stays a protocol error.
func requestError(code int64) bool { return ledger.RequestError(code) }

// storedRequestError rebuilds the protocol error a repeated call's record
// holds: the first call got it from the upstream, the repeat gets the same.
func (p *Proxy) storedRequestError(ctx context.Context, ce *client.Error) *jsonrpc.Error {
	if ledger.RowOf(ce.State).Act != ledger.ActReplay {
		return nil
	}
	rec, err := p.opts.Store.Get(ctx, ledger.ID{Tenant: p.opts.Tenant, Layer: ledger.LayerProxy, Tool: ce.Tool, Key: ce.Key})
	if err != nil || len(rec.Result) > 0 {
		return nil
	}
	code, err := strconv.ParseInt(strings.TrimPrefix(rec.ErrorKind, "jsonrpc_"), 10, 64)
	if err != nil || !strings.HasPrefix(rec.ErrorKind, "jsonrpc_") || !requestError(code) {
		return nil
	}
	return &jsonrpc.Error{Code: code, Message: rec.ErrorMessage}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// wireError answers a host that sent its own key (an mcpledger client, or
// any key-aware agent) the way a key-aware server would: by the row of the
// state the call stands in, with the -3100x errors of the wire
// conventions, which its client classifies and records (client.WireError).
// An isError result would be recorded as a final FAILED. States answered
// with a result (a denial, a refusal, the tool's own answer) return nil;
// so do errors that name no state, which callError answers.
func wireError(err error) *jsonrpc.Error { return client.WireError(err) }

// rowError is the JSON-RPC error of state st's row for key, nil when the
// row answers with a result (client.RowError).
func rowError(st ledger.State, key, msg string) *jsonrpc.Error { return client.RowError(st, key, msg) }

package guard

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

// call is a guarded call after its key, tenant and arguments passed every
// check: what the ledger needs to claim it.
type call struct {
	id     ledger.ID
	claim  ledger.ClaimRequest
	policy ledger.ToolSettings
	// fence is the client's fencing token for the key (Token 0: none sent).
	fence wire.Fence
	// args are the arguments as the request sent them, for a reconciler.
	args json.RawMessage
}

// prepare checks a guarded call and builds its claim. A non-nil error is
// the answer; nothing is stored.
func (g *Guard) prepare(ctx context.Context, req *Request) (*call, error) {
	tool := req.Tool
	if req.ArgumentsErr != nil {
		return nil, InvalidParams(fmt.Sprintf("tool %q: %v", tool, req.ArgumentsErr))
	}
	decoded, err := wire.DecodeArgs(req.Arguments)
	if err != nil {
		return nil, InvalidParams(fmt.Sprintf("tool %q: %v", tool, err))
	}
	key, err := wire.KeyOf(req.Meta, decoded)
	if err != nil {
		return nil, KeyRefusal(tool, "", err)
	}
	fence, err := wire.FenceOf(req.Meta)
	if err != nil {
		return nil, Refuse(ledger.CodeKeyRequired, ledger.ReasonKeyInvalid, key, "", fmt.Sprintf("tool %q: %v", tool, err), 0)
	}
	if req.Check != nil {
		if err := req.Check(decoded); err != nil {
			return nil, InvalidParams(fmt.Sprintf("tool %q: invalid arguments: %v", tool, err))
		}
	}
	tenant := DefaultTenant
	if req.Tenant != nil {
		if tenant, err = req.Tenant(ctx); err != nil {
			return nil, err
		}
		if err := ledger.ValidateTenant(tenant); err != nil {
			return nil, fmt.Errorf("guard: tenant of tool %q: %w", tool, err)
		}
	}
	pol := g.opts.Tools.For(tool)
	fp, err := args.Fingerprint(req.Arguments, pol.Exclude...)
	if err != nil {
		return nil, InvalidParams(fmt.Sprintf("tool %q: %v", tool, err))
	}
	red, err := pol.Redact.JSON(req.Arguments)
	if err != nil {
		return nil, InvalidParams(fmt.Sprintf("tool %q: %v", tool, err))
	}
	retention := pol.Retention
	if retention <= 0 {
		retention = g.opts.Retention
	}
	id := ledger.ID{Tenant: tenant, Layer: g.opts.Layer, Tool: tool, Key: key}
	c := &call{id: id, policy: pol, fence: fence, args: req.Arguments, claim: ledger.ClaimRequest{
		ID: id, Session: req.Session, Fingerprint: fp, Arguments: red,
		Retention: retention, ReusePolicy: pol.Reuse,
	}}
	// The server span's ids when one is recording; else the caller's,
	// from the traceparent in _meta.
	if c.claim.TraceID, c.claim.SpanID = telemetry.IDs(ctx); c.claim.TraceID == "" {
		c.claim.TraceID, c.claim.SpanID = wire.TraceParent(req.Meta)
	}
	return c, nil
}

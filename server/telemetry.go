package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
	"github.com/mcpledger/mcpledger/wire"
)

func newTelemetry(store ledger.Store, o Options) *telemetry.Telemetry {
	to := &telemetry.Options{
		MeterProvider:  o.MeterProvider,
		TracerProvider: o.TracerProvider,
		Logger:         o.Logger,
		Now:            o.Now,
	}
	if el, ok := store.(ledger.EventLog); ok {
		to.Events = el
	}
	if uc, ok := store.(telemetry.UnknownCounter); ok {
		to.Unknown = uc
	}
	return telemetry.New(ledger.SideServer, to)
}

// Close writes the call events still queued and stops their background
// writer. The store is the caller's to close, after the Guard. Calls that
// end after Close still work but leave no event.
func (g *Guard) Close(ctx context.Context) error {
	if err := g.tel.Close(ctx); err != nil {
		return fmt.Errorf("server: write call events: %w", err)
	}
	return nil
}

// result tells telemetry how a guarded call ended. c is nil when the call
// was refused before it had a tenant.
func result(tc *telemetry.Call, c *call, res mcp.Result, err error) telemetry.Result {
	var r telemetry.Result
	if c != nil {
		r.Tenant, r.Key = c.id.Tenant, c.id.Key
	}
	if err == nil {
		cr, _ := res.(*mcp.CallToolResult)
		switch {
		case cr == nil:
			r.Outcome = ledger.OutcomeSucceeded
		case cr.Meta[MetaReplay] != nil:
			r.Outcome, r.Duplicate = ledger.OutcomeReplayed, true
			if m, ok := cr.Meta[MetaReplay].(wire.Replay); ok {
				r.State = m.State
			}
		case len(cr.InputRequests) > 0:
			// Nothing took effect yet; the record waits RETRYABLE for the
			// continuation.
			r.Outcome = ledger.OutcomeNotSent
		case cr.IsError:
			r.Outcome = ledger.OutcomeFailed
		default:
			r.Outcome = ledger.OutcomeSucceeded
		}
		return r
	}
	var je *jsonrpc.Error
	isWire := errors.As(err, &je)
	switch {
	case isWire && je.Code == codeOutcomeUnknown:
		r.Outcome, r.Duplicate = ledger.OutcomeUnknown, !tc.Ran()
	case tc.Ran() && isWire && je.Code == jsonrpc.CodeInvalidParams:
		// The handler refused the arguments before acting: REJECTED.
		r.Outcome = ledger.OutcomeRejected
	case tc.Ran():
		// The handler refused the request before acting, or said nothing
		// happened: the record is RETRYABLE.
		r.Outcome = ledger.OutcomeNotSent
		if !isWire {
			r.Outcome = ledger.OutcomeError
		}
	case isWire && je.Code == codeKeyReused:
		r.Outcome = ledger.OutcomeKeyConflict
	case isWire && je.Code == codeInProgress:
		r.Outcome, r.Duplicate = ledger.OutcomeInProgress, true
	case isWire && (je.Code == codeKeyRequired || je.Code == jsonrpc.CodeInvalidParams),
		errors.Is(err, ledger.ErrInvalidTenant):
		r.Outcome = ledger.OutcomeInvalid
	default:
		r.Outcome = ledger.OutcomeError
	}
	return r
}

// peerOf is the network.transport of a request where the request says:
// one that came over HTTP carries its headers. Over stdio and in-memory
// transports alike it carries nothing, so it reports nothing.
func peerOf(req *mcp.CallToolRequest) telemetry.Peer {
	if req.Extra != nil && req.Extra.Header != nil {
		return telemetry.Peer{Transport: telemetry.TransportTCP}
	}
	return telemetry.Peer{}
}

// sessionOf is what telemetry reports of the session a request came
// through: its id and the negotiated protocol version.
func sessionOf(req *mcp.CallToolRequest) (id, protocolVersion string) {
	if req.Session != nil {
		id = req.Session.ID()
	}
	return id, req.ProtocolVersion()
}

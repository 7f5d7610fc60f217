package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
)

// closeTimeout bounds the last write of queued call events on Close.
const closeTimeout = 10 * time.Second

func newTelemetry(store ledger.Store, o Options, log *slog.Logger) *telemetry.Telemetry {
	to := &telemetry.Options{
		MeterProvider:  o.MeterProvider,
		TracerProvider: o.TracerProvider,
		Logger:         log,
		Now:            o.Now,
	}
	if el, ok := store.(ledger.EventLog); ok {
		to.Events = el
	}
	if uc, ok := store.(telemetry.UnknownCounter); ok {
		to.Unknown = uc
	}
	return telemetry.New(ledger.SideClient, to)
}

func (c *Client) closeTelemetry() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := c.tel.Close(ctx); err != nil {
		return fmt.Errorf("client: write call events: %w", err)
	}
	return nil
}

// Call is CallTool that also tells how the call was answered. Each call is
// one span (its trace context travels to the server in _meta and its ids
// are stored on the record) and one count in the metrics of package
// telemetry.
func (c *Client) Call(ctx context.Context, p *mcp.CallToolParams) (*Outcome, error) {
	name := ""
	if p != nil {
		name = p.Name
	}
	ctx, tc := c.tel.Start(ctx, name)
	o, err := c.call(ctx, p)
	tc.End(ctx, c.result(tc, o, err))
	return o, err
}

// result tells telemetry how a call ended.
func (c *Client) result(tc *telemetry.Call, o *Outcome, err error) telemetry.Result {
	r := telemetry.Result{Outcome: outcomeOf(o, err)}
	if ledger.ValidateTenant(c.opts.Tenant) == nil && r.Outcome != ledger.OutcomeInvalid {
		r.Tenant = c.opts.Tenant
	}
	var ce *Error
	switch {
	case o != nil:
		r.Key = o.Key
		if o.Record != nil {
			r.State = o.Record.State
		}
	case errors.As(err, &ce):
		r.Key, r.State = ce.Key, ce.State
	}
	switch r.Outcome {
	case ledger.OutcomeReplayed, ledger.OutcomeInProgress:
		r.Duplicate = true
	case ledger.OutcomeUnknown:
		// Found UNKNOWN, not made so by this call.
		r.Duplicate = !tc.Unknown()
	}
	return r
}

// outcomeOf names how a call ended.
func outcomeOf(o *Outcome, err error) ledger.Outcome {
	if err == nil {
		switch {
		case o.Replayed:
			return ledger.OutcomeReplayed
		case o.Result != nil && o.Result.IsError:
			return ledger.OutcomeFailed
		}
		return ledger.OutcomeSucceeded
	}
	switch {
	case errors.Is(err, ledger.ErrKeyReused):
		return ledger.OutcomeKeyConflict
	case errors.Is(err, ledger.ErrInvalidKey), errors.Is(err, ledger.ErrInvalidTenant), errors.Is(err, ErrArgumentsTooLarge):
		return ledger.OutcomeInvalid
	}
	if st, ok := StateOf(err); ok {
		// The row of the state the call stands in, as every consumer
		// reads it.
		return ledger.RowOf(st).Outcome
	}
	return ledger.OutcomeError
}

// sessionOf is what telemetry reports of the session a request went
// through: its id and the negotiated protocol version.
func sessionOf(s *mcp.ClientSession) (id, protocolVersion string) {
	if r := s.InitializeResult(); r != nil {
		protocolVersion = r.ProtocolVersion
	}
	return s.ID(), protocolVersion
}

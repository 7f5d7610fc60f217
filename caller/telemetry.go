package caller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/telemetry"
)

// closeTimeout bounds the last write of queued call events on Close.
const closeTimeout = 10 * time.Second

// NewTelemetry is the client-side telemetry a Caller with opts over store
// would make for itself (its events go to store when it keeps an event
// log), for Options.Telemetry: one for many Callers. Close it after the
// last of them.
func NewTelemetry(store ledger.Store, opts *Options) *telemetry.Telemetry {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return newTelemetry(store, o, log)
}

func newTelemetry(store ledger.Store, o Options, log *slog.Logger) *telemetry.Telemetry {
	to := &telemetry.Options{
		MeterProvider:  o.MeterProvider,
		TracerProvider: o.TracerProvider,
		Logger:         log,
		Now:            o.Now,
		Peer:           o.Peer,
	}
	if el, ok := store.(ledger.EventLog); ok {
		to.Events = el
	}
	if uc := telemetry.CounterOf(store); uc != nil {
		to.Unknown = uc
	}
	return telemetry.New(ledger.SideClient, to)
}

// Close writes the call events still queued (of its own telemetry; a
// shared Options.Telemetry is its maker's to close). The store is the
// caller's to close, after the Caller.
func (c *Caller[P, R]) Close() error {
	if !c.ownTel {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := c.tel.Close(ctx); err != nil {
		return fmt.Errorf("caller: write call events: %w", err)
	}
	return nil
}

// result tells telemetry how a call ended.
func (c *Caller[P, R]) result(tc *telemetry.Call, o *Outcome[R], err error) telemetry.Result {
	r := telemetry.Result{Outcome: c.outcomeOf(o, err)}
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
	if code, _, ok := retry.Answered(err); ok {
		r.ResponseCode = code
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
func (c *Caller[P, R]) outcomeOf(o *Outcome[R], err error) ledger.Outcome {
	if err == nil {
		var zero R
		switch {
		case o.Replayed:
			return ledger.OutcomeReplayed
		case o.Result != zero && c.codec.IsError(o.Result):
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

package guard

import (
	"errors"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/telemetry"
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
	if uc := telemetry.CounterOf(store); uc != nil {
		to.Unknown = uc
	}
	return telemetry.New(ledger.SideServer, to)
}

// outcome is how a guarded call ended, for telemetry.
type outcome struct {
	of        ledger.Outcome
	duplicate bool
	state     ledger.State
}

func (o outcome) result() telemetry.Result {
	return telemetry.Result{Outcome: o.of, Duplicate: o.duplicate, State: o.state}
}

// executed is the outcome of a call whose handler ran and ended as rep
// says: the row of the state it leaves the record in.
func executed(rep ledger.Report) outcome {
	to, err := ledger.Next(ledger.StateProcessing, rep.On)
	if err != nil {
		return outcome{of: ledger.OutcomeError}
	}
	return outcome{of: ledger.RowOf(to).Outcome, state: to}
}

// repeated is the outcome of a call that did not run the tool and was
// refused with err (Repeat): the outcome of the row that answered, or
// what the refusal says when no state's row answered.
func repeated(rec *ledger.Record, err error) outcome {
	var r *Refusal
	switch {
	case !errors.As(err, &r):
		return outcome{of: ledger.OutcomeError}
	case r.row != "":
		// A state's answer (RefuseAs): that row's outcome.
		return outcome{of: ledger.RowOf(r.row).Outcome, duplicate: true, state: recState(rec)}
	case r.Code == ledger.CodeKeyReused:
		return outcome{of: ledger.OutcomeKeyConflict}
	}
	return outcome{of: ledger.OutcomeError}
}

func recState(rec *ledger.Record) ledger.State {
	if rec == nil {
		return ""
	}
	return rec.State
}

// refused is the outcome of a call refused before the ledger was asked.
func refused(err error) outcome {
	var r *Refusal
	switch {
	case errors.As(err, &r) && (r.Code == ledger.CodeKeyRequired || r.Code == ledger.CodeInvalidParams),
		errors.Is(err, ledger.ErrInvalidTenant):
		return outcome{of: ledger.OutcomeInvalid}
	}
	return outcome{of: ledger.OutcomeError}
}

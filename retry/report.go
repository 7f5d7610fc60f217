package retry

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
)

// Failure is the ledger report of a call that ended with err after
// attempts requests, by err's class: a refusal before the tool ran
// (OnRefused: REJECTED), a request none of whose attempts may have reached
// the tool (OnNotSent: RETRYABLE), or an ambiguous end (OnAmbiguous:
// UNKNOWN). Every client adapter, whatever its SDK, records failures
// through it.
func Failure(err error, maybeSent bool, attempts int) ledger.Report {
	rep := ledger.Report{On: ledger.OnAmbiguous, ErrorKind: "ambiguous", ErrorMessage: ledger.OneLine(err.Error(), 500), Attempts: attempts}
	switch cls := Classify(err); {
	case cls == Permanent:
		rep.On, rep.ErrorKind = ledger.OnRefused, permanentKind(err)
		var je *RPCError
		if errors.As(err, &je) && je.Message != "" {
			// The server's own words, not an SDK's wrapping of them: the
			// record reads the same whichever SDK sent the call.
			rep.ErrorMessage = ledger.OneLine(je.Message, 500)
		}
	case !maybeSent:
		rep.On, rep.ErrorKind = ledger.OnNotSent, "not_sent"
	case cls == Unknown:
		rep.ErrorKind = "server_outcome_unknown"
	}
	return rep
}

// permanentKind names a deterministic rejection for the record.
func permanentKind(err error) string {
	if r := Reason(err); r != "" {
		return r
	}
	var je *RPCError
	if errors.As(err, &je) {
		return fmt.Sprintf("jsonrpc_%d", je.Code)
	}
	return ledger.KindRefused
}

// After sorts the failure err of one attempt of a keyed call: sent
// reports whether the request may have reached the tool, again whether it
// may be sent once more. A transient failure is sent again; an ambiguous
// one only when resendable (the server honours keys, trusted configuration
// says the tool is idempotent, or the call is a read) and ctx is still
// live; an unknown or permanent one never.
func After(ctx context.Context, err error, resendable bool) (sent, again bool) {
	switch Classify(err) {
	case Transient:
		return false, true
	case Ambiguous:
		return true, ctx.Err() == nil && resendable
	case Unknown:
		// The server received the request and cannot tell whether it
		// ran: the record must become UNKNOWN, not RETRYABLE.
		return true, false
	}
	return false, false
}

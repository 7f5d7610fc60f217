package retry

import (
	"encoding/json"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

type errorData = wire.ErrorData

// Reason returns data.reason of the first *RPCError in err's chain that
// has one, or "" when there is none.
func Reason(err error) string {
	for _, je := range jsonrpcErrors(err) {
		if d, ok := decodeData(je); ok && d.Reason != "" {
			return d.Reason
		}
	}
	return ""
}

// Answered returns the code and data of the first JSON-RPC error in err's
// chain: what the server answered, in SDK-neutral terms (data is zero when
// the error has none, or none that follows the wire conventions).
func Answered(err error) (code int64, data wire.ErrorData, ok bool) {
	errs := jsonrpcErrors(err)
	if len(errs) == 0 {
		return 0, wire.ErrorData{}, false
	}
	je := errs[0]
	if len(je.Data) > 0 {
		if json.Unmarshal(je.Data, &data) != nil {
			data = wire.ErrorData{}
		}
	}
	return je.Code, data, true
}

// RetryAfter returns the wait the server asked for in data.retryAfterMs of a
// -31002 in_progress error in err's chain.
func RetryAfter(err error) (time.Duration, bool) {
	for _, je := range jsonrpcErrors(err) {
		if je.Code != ledger.CodeInProgress {
			continue
		}
		if d, ok := decodeData(je); ok && d.RetryAfterMs > 0 {
			return time.Duration(d.RetryAfterMs) * time.Millisecond, true
		}
	}
	return 0, false
}

func decodeData(je *RPCError) (errorData, bool) {
	var d errorData
	if len(je.Data) == 0 {
		return d, false
	}
	if err := json.Unmarshal(je.Data, &d); err != nil {
		// Data from a server that does not follow our conventions.
		return d, false
	}
	return d, true
}

// jsonrpcErrors lists every *RPCError in err's tree, outermost first.
func jsonrpcErrors(err error) []*RPCError {
	var out []*RPCError
	walk(err, func(e error) {
		if je, ok := e.(*RPCError); ok && je != nil {
			out = append(out, je)
		}
	})
	return out
}

// walk calls visit for err and every error it wraps, depth first, in the
// order errors.Is would look at them.
func walk(err error, visit func(error)) {
	for err != nil {
		visit(err)
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c, visit)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}

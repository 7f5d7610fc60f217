package retry

import (
	"encoding/json"
	"errors"
	"fmt"
)

// RPCError is a JSON-RPC error answer in SDK-neutral terms: what the peer
// sent (or, for -32005, what the SDK's transport made of a failed HTTP
// request). Package retry classifies by these and by the sentinels below,
// never by an SDK's own error types: each SDK adapter reads its SDK's
// errors and attaches what they say with Wrap.
type RPCError struct {
	Code    int64
	Message string
	Data    json.RawMessage
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, &RPCError{Code: c}) true for an answer with code c.
func (e *RPCError) Is(target error) bool {
	t, ok := target.(*RPCError)
	return ok && t.Code == e.Code
}

// The transport facts an adapter marks an error with (Wrap).
var (
	// ErrConnectionClosed: the session was closed before the request was
	// written, so nothing reached the server; a retry needs a new session.
	ErrConnectionClosed = errors.New("retry: the connection was closed before the request was written")
	// ErrSessionMissing: the server no longer knows the session (HTTP 404)
	// and handled nothing; a retry needs a new session.
	ErrSessionMissing = errors.New("retry: the server no longer knows the session")
)

// Wrap returns err with facts an SDK adapter read from it: the
// *RPCError answers in it (outermost first) and ErrConnectionClosed or
// ErrSessionMissing. The result reads as err; errors.Is and errors.As see
// the facts and err's own chain, so the SDK's types stay reachable. Wrap
// returns err unchanged when there are no facts, and nil for nil.
func Wrap(err error, facts ...error) error {
	if err == nil || len(facts) == 0 {
		return err
	}
	return &wrapped{err: err, facts: facts}
}

type wrapped struct {
	err   error
	facts []error
}

func (w *wrapped) Error() string { return w.err.Error() }

func (w *wrapped) Unwrap() []error {
	return append(append(make([]error, 0, len(w.facts)+1), w.facts...), w.err)
}

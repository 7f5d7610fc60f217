package server

import (
	"encoding/json"
	"time"

	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The wire names, from their one home in package wire.
const (
	MetaKey        = wire.MetaKey
	ArgKey         = wire.ArgKey
	MetaReplay     = wire.MetaReplay
	CapabilityName = wire.Capability
)

// Server error codes and reasons, from package wire.
const (
	codeKeyReused      = wire.CodeKeyReused
	codeInProgress     = wire.CodeInProgress
	codeOutcomeUnknown = wire.CodeOutcomeUnknown
	codeKeyRequired    = wire.CodeKeyRequired

	reasonKeyReused      = wire.ReasonKeyReused
	reasonInProgress     = wire.ReasonInProgress
	reasonOutcomeUnknown = wire.ReasonOutcomeUnknown
	reasonKeyRequired    = wire.ReasonKeyRequired
	reasonKeyInvalid     = wire.ReasonKeyInvalid
)

// wireError builds one of the -3100x errors: retry.ServerError's shape,
// plus the key and record state. The key is echoed back (it is
// the caller's own value and holds no secret by the key rules) so a client
// can tell which operation the error is about.
func wireError(code int64, reason, key, state, msg string, retryAfter time.Duration) *jsonrpc.Error {
	d := wire.ErrorData{Reason: reason, Key: key, State: state, RetryAfterMs: wire.RetryAfterMs(retryAfter)}
	data, err := json.Marshal(d)
	if err != nil {
		// Strings and an integer always marshal.
		panic("server: encoding error data: " + err.Error())
	}
	return &jsonrpc.Error{Code: code, Message: msg, Data: data}
}

func invalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

package server

import (
	"encoding/json"
	"time"

	"github.com/mcpledger/mcpledger/retry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Wire names of the mcpledger conventions (DESIGN.md, "Wire conventions").
const (
	// MetaKey is the _meta entry that carries the idempotency key.
	MetaKey = "io.github.mcpledger/idempotency-key"
	// ArgKey is the argument that carries the key when a tool's input schema
	// declares it.
	ArgKey = "idempotency_key"
	// MetaReplay is the _meta entry a replayed result carries.
	MetaReplay = "io.github.mcpledger/replay"
	// CapabilityName is the experimental capability the server advertises.
	CapabilityName = "io.github.mcpledger/idempotency"
)

// Server error codes and reasons: the client side of the same convention
// (package retry) owns them, so both ends always agree.
const (
	codeKeyReused      = retry.CodeKeyReused
	codeInProgress     = retry.CodeInProgress
	codeOutcomeUnknown = retry.CodeOutcomeUnknown
	codeKeyRequired    = retry.CodeKeyRequired

	reasonKeyReused      = retry.ReasonKeyReused
	reasonInProgress     = retry.ReasonInProgress
	reasonOutcomeUnknown = retry.ReasonOutcomeUnknown
	reasonKeyRequired    = retry.ReasonKeyRequired
	reasonKeyInvalid     = retry.ReasonKeyInvalid
)

type errorData struct {
	Reason       string `json:"reason"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	Key          string `json:"key,omitempty"`
	State        string `json:"state,omitempty"`
}

// wireError builds one of the -3100x errors: retry.ServerError's shape,
// plus the key and record state. The key is echoed back (it is
// the caller's own value and holds no secret by the key rules) so a client
// can tell which operation the error is about.
func wireError(code int64, reason, key, state, msg string, retryAfter time.Duration) *jsonrpc.Error {
	d := errorData{Reason: reason, Key: key, State: state}
	if retryAfter > 0 {
		d.RetryAfterMs = int64((retryAfter + time.Millisecond - 1) / time.Millisecond)
	}
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

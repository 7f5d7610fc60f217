package server

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Error builds the JSON-RPC error a server returns for one of the
// mcpledger codes (package wire: -31001..-31004), with data.reason and,
// when positive, data.retryAfterMs rounded up to whole milliseconds. A tool
// handler or middleware returns it as its error and go-sdk sends code,
// message and data unchanged.
func Error(code int64, reason, message string, retryAfter time.Duration) *jsonrpc.Error {
	return refusal(guard.Refuse(code, reason, "", "", message, retryAfter))
}

// refusal is r as go-sdk's error value.
func refusal(r *guard.Refusal) *jsonrpc.Error {
	e := &jsonrpc.Error{Code: r.Code, Message: r.Message}
	if r.Data != nil {
		data, err := json.Marshal(r.Data)
		if err != nil {
			// Strings and an integer always marshal.
			panic("server: encoding error data: " + err.Error())
		}
		e.Data = data
	}
	return e
}

// rpcError is err as go-sdk's error value when it is a guard.Refusal, else
// err.
func rpcError(err error) error {
	var r *guard.Refusal
	if errors.As(err, &r) {
		return refusal(r)
	}
	return err
}

package retry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/cenkalti/backoff/v4"

	"github.com/mcpledger/mcpledger/ledger"
)

// Class says what a failed call means for the operation behind it.
type Class int

const (
	// Permanent: the request was rejected deterministically (or the caller
	// gave up); sending it again cannot help.
	Permanent Class = iota
	// Transient: the request provably never reached the tool; retry it with
	// the same key.
	Transient
	// Ambiguous: the request may have executed. Retry only when the server
	// honours idempotency keys; otherwise the outcome is unknown.
	Ambiguous
	// Unknown: the server says the outcome is unknown (-31003). Never retry;
	// a person or a reconciliation decides.
	Unknown
)

func (c Class) String() string {
	switch c {
	case Permanent:
		return "permanent"
	case Transient:
		return "transient"
	case Ambiguous:
		return "ambiguous"
	case Unknown:
		return "unknown"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Classify tells what err, the failure of one call as an SDK adapter
// reports it (Wrap), means for the operation. A nil error is Permanent
// (there is nothing to retry).
// An error marked with Stop is Permanent. Anything not recognised is
// Ambiguous: an unrecognised failure may have happened after the server
// executed the call, and treating it as retryable could run it twice.
//
// The cases follow how go-sdk v1.8.0 reports failures (mcp/transport.go
// call, internal/jsonrpc2/conn.go, mcp/streamable.go Write/checkResponse),
// as package client translates them; the mcp-go adapter maps its SDK's
// failures onto the same facts:
//
//   - context deadline or cancel: the context's error, while the request may
//     already be running at the server: Ambiguous.
//   - ErrConnectionClosed (go-sdk's mcp.ErrConnectionClosed): the session was already dead when the call was
//     made (or the peer answered -32004 "server is closing"), so the request
//     was never written: Transient.
//   - ErrSessionMissing (go-sdk's mcp.ErrSessionMissing, HTTP 404 for a known session): the server
//     dropped the session and handled nothing: Transient.
//   - io.EOF, a reset: the peer went away with the call in flight:
//     Ambiguous. EPIPE on the write: the peer stopped reading before the
//     request was complete: Transient.
//   - JSON-RPC errors answered by the server: our codes -31001/-31004 and the
//     protocol's -32700/-32600/-32601/-32602 (and MCP's -32002, -32020..-32022,
//     -32042) are Permanent; -31002 is Transient; -31003 is Unknown; other
//     codes (-32603 internal, application codes) are Ambiguous because the
//     handler may have failed half way.
//   - HTTP 401/403 (streamable HTTP): Permanent.
//   - -32005 "rejected by transport" (streamable HTTP): Transient when the
//     HTTP request failed to dial; Ambiguous otherwise (429/5xx after send, a
//     connection dropped after the request was written).
func Classify(err error) Class {
	if err == nil {
		return Permanent
	}
	var stop *backoff.PermanentError
	if errors.As(err, &stop) {
		return Permanent
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Ambiguous
	case errors.Is(err, ErrConnectionClosed), errors.Is(err, ErrSessionMissing):
		return Transient
	case errors.Is(err, ledger.ErrKeyReused), errors.Is(err, ledger.ErrInvalidKey),
		errors.Is(err, ledger.ErrInvalidTenant):
		return Permanent
	case errors.Is(err, ledger.ErrInProgress):
		return Transient
	}

	// A server answer decides before any transport detail: a 4xx body can
	// carry the server's JSON-RPC error next to the -32005 wrapper.
	rejected, answered := false, false
	for _, je := range jsonrpcErrors(err) {
		switch je.Code {
		case ledger.CodeKeyReused, ledger.CodeKeyRequired,
			ledger.CodeParseError, ledger.CodeInvalidRequest,
			ledger.CodeMethodNotFound, ledger.CodeInvalidParams,
			codeResourceNotFound, codeHeaderMismatch,
			codeMissingRequiredClientCapabilities,
			codeUnsupportedProtocolVersion, codeURLElicitationRequired:
			return Permanent
		case ledger.CodeInProgress:
			return Transient
		case ledger.CodeOutcomeUnknown:
			return Unknown
		case codeRejectedByTransport:
			rejected = true
		default:
			// Another code: the server answered and its handler may have
			// run. Its message text is the server's, not an HTTP status.
			answered = true
		}
	}
	if answered {
		return Ambiguous
	}
	if authRefused(err) {
		// Refused by authorization before the tool ran. Without an OAuth
		// handler go-sdk reports this without the -32005 marker and fails
		// the session; with one, a failed re-authorization is marked.
		return Permanent
	}
	if rejected {
		return classifyRejected(err)
	}

	if notSent(err) {
		return Transient
	}
	var unsupported *json.UnsupportedTypeError
	var unsupportedValue *json.UnsupportedValueError
	var marshaler *json.MarshalerError
	if errors.As(err, &unsupported) || errors.As(err, &unsupportedValue) || errors.As(err, &marshaler) {
		// The arguments could not be encoded, so nothing left the process.
		// Encoding is deterministic: a retry fails the same way.
		return Permanent
	}
	return Ambiguous
}

// SessionLost reports whether err means the session can carry no more calls,
// so the caller must connect again before a retry: the connection was closed,
// the peer hung up mid-call, the HTTP server forgot the session, or go-sdk
// failed the HTTP session on a 401/403. A JSON-RPC error leaves the session
// usable: either the server answered, or go-sdk marked the failure -32005
// "rejected by transport" and kept the connection on purpose, even when it
// wraps an EOF from one dropped HTTP request.
func SessionLost(err error) bool {
	if errors.Is(err, ErrConnectionClosed) || errors.Is(err, ErrSessionMissing) {
		return true
	}
	if len(jsonrpcErrors(err)) > 0 {
		// The server answered (the connection works), or go-sdk marked the
		// failure -32005, which it keeps from breaking the connection.
		return false
	}
	if authRefused(err) {
		return true
	}
	return errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNRESET)
}

// classifyRejected sorts go-sdk's -32005 "rejected by transport" errors,
// which streamable HTTP uses both for requests that never left and for
// requests the server answered with 429/5xx.
func classifyRejected(err error) Class {
	if notSent(err) {
		return Transient
	}
	// 429/5xx after send, a connection that broke after the request was
	// written, or a failed authorization flow: the server may have run it.
	return Ambiguous
}

// notSent reports whether err proves the request never reached the tool:
//
//   - the connection could not be established. go-sdk wraps the *url.Error
//     of http.Client.Do with %w (mcp/streamable.go, doRequest in
//     streamableClientConn.Write), so the dial failure is visible to
//     errors.As;
//   - writing the request failed with EPIPE: nobody was reading, so the
//     message's end (for stdio, the newline that completes it) never
//     arrived, and a server acts only on a complete message. This is the
//     stdio server that died before the client noticed.
//
// Other failures (a reset or EOF after the request was written) are not
// proof: the server may have read and run the request.
func notSent(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// MCP's protocol codes (go-sdk v1.8.0 names them mcp.CodeHeaderMismatch,
// mcp.CodeMissingRequiredClientCapabilities, mcp.CodeUnsupportedProtocolVersion
// and mcp.CodeURLElicitationRequired): refusals before any tool ran.
const (
	codeHeaderMismatch                    = -32020
	codeMissingRequiredClientCapabilities = -32021
	codeUnsupportedProtocolVersion        = -32022
	codeURLElicitationRequired            = -32042
)

// Codes go-sdk uses without exporting a name for them in v1.8.0.
const (
	// internal/jsonrpc2/wire.go ErrRejected.
	codeRejectedByTransport = -32005
	// The pre-1.7 resource-not-found code, still sent by older servers and
	// by go-sdk under MCPGODEBUG=customresnotfounderrcode=1 (mcp/resource.go).
	codeResourceNotFound = -32002
)

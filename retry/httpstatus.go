package retry

import (
	"net/http"
	"strings"
)

// httpStatus recovers the HTTP status of a failed streamable HTTP request
// from err's message. go-sdk v1.8.0 keeps no structured status: for
// 429/500/502/503/504 it returns
//
//	fmt.Errorf("%w: %s: %v", jsonrpc2.ErrRejected, requestSummary, http.StatusText(resp.StatusCode))
//
// and for other non-2xx answers without a JSON-RPC body (401, 403 without an
// OAuth handler)
//
//	fmt.Errorf("%s: %v", requestSummary, http.StatusText(resp.StatusCode))
//
// (mcp/streamable.go, streamableClientConn.checkResponse, lines 2586 and
// 2609), and mcp.call appends nothing after it ("calling %q: %w"). The status
// text therefore ends the message. This is the only place that reads error
// text; when go-sdk exposes the status, use that instead.
func httpStatus(err error) (int, bool) {
	msg := err.Error()
	for _, code := range statusesByText {
		if strings.HasSuffix(msg, ": "+http.StatusText(code)) {
			return code, true
		}
	}
	return 0, false
}

// statusesByText are the statuses httpStatus recognises: the ones go-sdk
// treats as transient and the authorization failures.
var statusesByText = []int{
	http.StatusUnauthorized,
	http.StatusForbidden,
	http.StatusTooManyRequests,
	http.StatusInternalServerError,
	http.StatusBadGateway,
	http.StatusServiceUnavailable,
	http.StatusGatewayTimeout,
}

// authRefused reports whether err is go-sdk's report of an HTTP 401 or 403.
func authRefused(err error) bool {
	status, ok := httpStatus(err)
	return ok && (status == http.StatusUnauthorized || status == http.StatusForbidden)
}

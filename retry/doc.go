// Package retry decides whether a failed MCP tool call may be sent again and
// paces the attempts.
//
// [Classify] sorts every failure a go-sdk v1.8 client session reports into
// [Permanent] (never retry), [Transient] (provably not executed: retry with the
// same key), [Ambiguous] (may have executed: retry only when the server honours
// idempotency keys) and [Unknown] (the server itself says the outcome is
// unknown: reconcile). [Do] runs an operation with exponential backoff and full
// jitter, honouring the server's retryAfterMs and ending any wait as soon as
// the context is done:
//
//	err := retry.Do(ctx, nil, func(ctx context.Context, attempt int) error {
//		_, err := session.CallTool(ctx, freshParams(key)) // same key every attempt
//		if err != nil && retry.Classify(err) != retry.Transient {
//			return retry.Stop(err)
//		}
//		if retry.SessionLost(err) {
//			session = reconnect(ctx) // a dead session stays dead in go-sdk
//		}
//		return err
//	})
//
// The server error codes of the mcpledger wire conventions (-31001..-31004)
// and their data.reason values live here too, so that the client and the
// server middleware build and read them the same way.
package retry

package retry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/server"
)

// FuzzErrorData feeds arbitrary error data and messages to the readers of
// server errors: they must not panic, must not invent a wait, and must read
// back what ServerError wrote.
func FuzzErrorData(f *testing.F) {
	f.Add(int64(ledger.CodeInProgress), []byte(`{"reason":"in_progress","retryAfterMs":250}`), "in progress")
	f.Add(int64(ledger.CodeKeyReused), []byte(`{"reason":"key_reused"}`), "x")
	f.Add(int64(-32005), []byte(`null`), `sending "tools/call": Unauthorized`)
	f.Add(int64(ledger.CodeInProgress), []byte(`{"retryAfterMs":-5}`), "")
	f.Add(int64(0), []byte(`[1,2`), "Too Many Requests")
	f.Fuzz(func(t *testing.T, code int64, data []byte, msg string) {
		err := fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: code, Message: msg, Data: data})
		if d, ok := retry.RetryAfter(client.Neutral(err)); ok && (d <= 0 || code != ledger.CodeInProgress) {
			t.Errorf("RetryAfter(%v) = %v, true; want a positive wait from -31002 only", err, d)
		}
		c := retry.Classify(client.Neutral(err))
		if c < retry.Permanent || c > retry.Unknown {
			t.Errorf("Classify(%v) = %v; want a known class", err, c)
		}
		first, second := retry.Reason(client.Neutral(err)), retry.Reason(client.Neutral(err))
		if retry.Classify(client.Neutral(err)) != c || first != second {
			t.Errorf("Classify or Reason of %v is not deterministic", err)
		}

		// Reasons are ASCII words; JSON would rewrite invalid UTF-8.
		var reason string
		if json.Valid(data) && utf8.Valid(data) {
			reason = string(data)
		}
		after := time.Duration(len(msg)) * time.Millisecond
		built := server.Error(ledger.CodeInProgress, reason, msg, after)
		if got := retry.Reason(client.Neutral(built)); got != reason {
			t.Errorf("Reason(ServerError(reason %q)) = %q", reason, got)
		}
		got, ok := retry.RetryAfter(client.Neutral(errors.Join(errors.New("x"), built)))
		if ok != (after > 0) || (ok && got != after) {
			t.Errorf("RetryAfter(ServerError(%v)) = %v, %v", after, got, ok)
		}
	})
}

func BenchmarkClassify(b *testing.B) {
	errs := map[string]error{
		"server code": fmt.Errorf("calling %q: %w", "tools/call", server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "busy", time.Second)),
		"plain":       errors.New("something odd"),
	}
	for name, err := range errs {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				retry.Classify(client.Neutral(err))
			}
		})
	}
}

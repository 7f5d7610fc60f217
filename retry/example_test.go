package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/server"
)

// A server busy with the same key answers -31002 with retryAfterMs: Do waits
// at least that long and sends the call again; a failure that is not
// transient stops the loop.
func ExampleDo() {
	busy := client.Neutral(server.Error(ledger.CodeInProgress, ledger.ReasonInProgress, "operation in progress", 20*time.Millisecond))
	policy := &retry.Policy{
		InitialInterval: time.Millisecond,
		OnRetry: func(err error, next time.Duration, attempt int) {
			fmt.Printf("attempt %d: %v (%s), waiting at least 20ms: %v\n",
				attempt, retry.Reason(client.Neutral(err)), retry.Classify(client.Neutral(err)), next >= 20*time.Millisecond)
		},
	}
	err := retry.Do(context.Background(), policy, func(ctx context.Context, attempt int) error {
		if attempt < 3 {
			return busy
		}
		fmt.Printf("attempt %d: executed\n", attempt)
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// attempt 1: in_progress (transient), waiting at least 20ms: true
	// attempt 2: in_progress (transient), waiting at least 20ms: true
	// attempt 3: executed
	// err: <nil>
}

func ExampleClassify() {
	keyReused := server.Error(ledger.CodeKeyReused, ledger.ReasonKeyReused, "key bound to other arguments", 0)
	fmt.Println(retry.Classify(client.Neutral(keyReused)))
	fmt.Println(retry.Classify(client.Neutral(context.DeadlineExceeded)))
	fmt.Println(retry.Classify(client.Neutral(server.Error(ledger.CodeOutcomeUnknown, ledger.ReasonOutcomeUnknown, "unknown", 0))))
	// Output:
	// permanent
	// ambiguous
	// unknown
}
